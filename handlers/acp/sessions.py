"""``session/list``: the quests of a home as ACP sessions (a session is a quest).

Each quest is one :class:`acp.schema.SessionInfo`: its id, its directory as ``cwd`` (the
quest's git repository, where its agent works), its title, and its last event's time as
``updatedAt``; ``_meta.ds_events`` adds its status, stage and health
(:func:`projections.health.derive`: ``failed``, ``retrying``, ...). Sessions come most
recently updated first, :data:`PAGE_SIZE` a page; ``nextCursor`` (opaque: the last
row's time and id) gives the next page. ``cwd`` keeps the quests whose directory is that
path or under it (an editor opened on the home, or on its ``quests/`` folder, lists
them all; one opened on a quest lists that quest).
"""

from __future__ import annotations

import base64
import os

import msgspec

from acp import schema
from ds_events.errors import Invalid
from ds_events.home import Home
from ds_events.services import quest as quest_service
from projections.acp import META_KEY

__all__ = ["list_sessions", "PAGE_SIZE"]

PAGE_SIZE = 100


def list_sessions(home: Home, *, cwd: str | None = None, cursor: str | None = None) -> schema.ListSessionsResponse:
    """One page of the home's quests as sessions. A ``cwd`` that is not absolute, or a
    cursor this agent did not hand out, is refused (``invalid_argument``, ``invalid_cursor``)."""
    if cwd is not None and not os.path.isabs(cwd):
        raise Invalid(f"cwd must be an absolute path, not {cwd!r}", code="invalid_argument", argument="cwd")
    after = _decode_cursor(cursor) if cursor else None
    rows = []
    for row in quest_service.list_quests(home).quests:
        root = str(home.quest_root(row.quest_id))
        if cwd is None or _within(root, cwd):
            rows.append((row, root))
    rows.sort(key=lambda r: (r[0].updated_at, r[0].quest_id), reverse=True)
    if after is not None:
        rows = [r for r in rows if (r[0].updated_at, r[0].quest_id) < after]
    page, more = rows[:PAGE_SIZE], len(rows) > PAGE_SIZE
    sessions = [
        schema.SessionInfo(
            session_id=row.quest_id, cwd=root, title=row.title or row.quest_id, updated_at=row.updated_at or None,
            field_meta={META_KEY: {"status": row.status, "anchor": row.anchor, "last_seq": row.last_seq,
                                   "open_requests": row.open_requests, "health": msgspec.to_builtins(row.health)}},
        )
        for row, root in page
    ]
    next_cursor = _encode_cursor(page[-1][0].updated_at, page[-1][0].quest_id) if more and page else None
    return schema.ListSessionsResponse(sessions=sessions, next_cursor=next_cursor)


# -- private helpers -------------------------------------------------------------------


def _within(path: str, top: str) -> bool:
    path, top = os.path.normpath(path), os.path.normpath(top)
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _encode_cursor(updated_at: str, quest_id: str) -> str:
    return base64.urlsafe_b64encode(f"{updated_at}\n{quest_id}".encode()).decode()


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        updated_at, sep, quest_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("\n")
    except (ValueError, UnicodeError):
        sep = ""
    if not sep:
        raise Invalid(f"cursor {cursor!r} is not one this agent handed out (nextCursor)", code="invalid_cursor",
                      argument="cursor")  # fmt: skip
    return updated_at, quest_id
