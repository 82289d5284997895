"""The delivery arguments DeepScientist's ``interact`` takes beyond the message itself,
checked and normalised before anything is written.

- ``summary_preview``: the short line a connector shows first; derived from the message
  (its first 220 characters) when not given.
- ``importance`` and ``response_phase``: labels a connector may render (a warning badge,
  "final answer"); one of a fixed set each.
- ``attachments``: files of the quest (or of one of its worktrees) or http(s) URLs sent
  with the message; a path is stored relative to the quest and must exist when sent.
- ``surface_actions``: device-side actions a connector may offer (``{"type": ...}``),
  ``connector_hints``: per-connector rendering hints (``{"qq": {"render_mode": ...}}``).
- ``expects_reply``: overrides the reply mode's default (see :func:`reply_mode_for`).
- ``min_interval_seconds``: see :func:`too_soon`.

Every refusal is an :class:`~ds_events.errors.Invalid` with its own code (catalogued in
``ds_events.services.interactions.errors``); nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from ds_events.artifacts.validate import confine_path
from ds_events.errors import Invalid
from ds_events.events.base import ts_seconds
from ds_events.events.interaction import DeliveryOptions, ReplyMode

from .commands import IMPORTANCE, MAX_ACTIONS, MAX_ATTACHMENTS, MAX_PREVIEW, PREVIEW_CHARS, RESPONSE_PHASES, Interact

__all__ = [
    "check_forms",
    "reply_mode_for",
    "too_soon",
    "check_interaction_id",
    "MAX_HINT_BYTES",
    "MAX_MIN_INTERVAL",
]

MAX_HINT_BYTES = 8192
MAX_MIN_INTERVAL = 86_400.0
_ATTACHMENT_KEYS = {
    "kind", "path", "url", "name", "label", "content_type", "caption", "description", "extracted_text_path",
    "size_bytes", "connector_delivery",
}  # fmt: skip
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def check_forms(root: Path, cmd: Interact) -> DeliveryOptions:
    """``cmd``'s delivery arguments checked and normalised (``root``: the quest), as
    ``interaction.sent`` keeps them."""
    if cmd.importance not in IMPORTANCE:
        raise Invalid(f"importance must be one of {', '.join(IMPORTANCE)}", code="invalid_importance",
                      allowed=list(IMPORTANCE))  # fmt: skip
    if cmd.response_phase not in RESPONSE_PHASES:
        raise Invalid(f"response_phase must be one of {', '.join(RESPONSE_PHASES)}", code="invalid_response_phase",
                      allowed=list(RESPONSE_PHASES))  # fmt: skip
    if cmd.min_interval_seconds is not None:
        seconds = cmd.min_interval_seconds
        if isinstance(seconds, bool) or not (0 < seconds <= MAX_MIN_INTERVAL):
            raise Invalid(f"min_interval_seconds must be more than 0 and at most {MAX_MIN_INTERVAL:g}",
                          code="invalid_min_interval")  # fmt: skip
        if cmd.kind != "progress":
            raise Invalid("min_interval_seconds only applies to kind progress", code="invalid_min_interval")
    # Checked in this order (the first refusal is the one answered).
    preview = _preview(cmd.summary_preview, cmd.message)
    attachments = _bounded(cmd.attachments, "attachments", MAX_ATTACHMENTS, code="invalid_attachments")
    attached = [_attachment(root, i, a) for i, a in enumerate(attachments)]
    actions = _bounded(cmd.surface_actions, "surface_actions", MAX_ACTIONS, code="invalid_surface_actions")
    offered = [_action(i, a) for i, a in enumerate(actions)]
    hints = _hints(cmd.connector_hints, "connector_hints", code="invalid_connector_hints")
    return DeliveryOptions(
        summary_preview=preview, importance=cmd.importance, response_phase=cmd.response_phase, attachments=attached,
        surface_actions=offered, connector_hints=hints, allow_free_text=cmd.allow_free_text,
    )


def reply_mode_for(
    kind: str, reply_mode: ReplyMode | None, expects_reply: bool | None, default: ReplyMode
) -> tuple[ReplyMode, bool]:
    """The effective reply mode and whether the interaction expects a reply.

    Without ``reply_mode``, ``expects_reply`` overrides the kind's default mode:
    ``false`` turns a decision request into a threaded one (the user may answer, nothing
    waits for it), ``true`` makes an approval result answerable (threaded); progress,
    milestones and answers stay threaded (they cannot block) and are marked as waiting
    for an answer. With an explicit ``reply_mode`` the two must agree: no reply is
    expected where none can be given, and a blocking request always expects one.
    """
    if reply_mode is not None:
        if expects_reply is True and reply_mode == "none":
            raise Invalid("expects_reply=true needs a reply_mode that takes replies (threaded or blocking)",
                          code="invalid_expects_reply")  # fmt: skip
        if expects_reply is False and reply_mode == "blocking":
            raise Invalid("a blocking request always expects a reply: use reply_mode threaded with expects_reply=false",
                          code="invalid_expects_reply")  # fmt: skip
        return reply_mode, reply_mode == "blocking" if expects_reply is None else expects_reply
    if expects_reply is None:
        return default, default == "blocking"
    if expects_reply:
        return ("blocking" if kind == "decision_request" else "threaded"), True
    return ("none" if default == "none" else "threaded"), False


def too_soon(last_ts: str | None, min_interval: float | None, now: float) -> float | None:
    """Seconds left before another progress update may be sent, or None when it may go
    now (no limit asked, no earlier update, or the interval has passed)."""
    if min_interval is None or not last_ts:
        return None
    left = min_interval - (now - ts_seconds(last_ts))
    return left if left > 0 else None


def check_interaction_id(value: str | None) -> str | None:
    """A caller-chosen interaction id (DeepScientist lets the caller name one)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise Invalid("interaction_id must be 1-128 letters, digits, '_', '.', ':' or '-', starting with a letter or digit",
                      code="invalid_interaction_id")  # fmt: skip
    return value


# -- helpers ---------------------------------------------------------------------------


def _preview(given: str | None, message: str) -> str:
    if given is None:
        text = " ".join(message.split())
        return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1].rstrip() + "…"
    if not given.strip() or len(given) > MAX_PREVIEW:
        raise Invalid(f"summary_preview must be a non-empty line of at most {MAX_PREVIEW} characters",
                      code="invalid_summary_preview")  # fmt: skip
    return given.strip()


def _bounded(items: Sequence[object] | None, field: str, limit: int, *, code: str) -> Sequence[object]:
    items = items or []
    if len(items) > limit:
        raise Invalid(f"{field} takes at most {limit} items", code=code)
    return items


def _attachment(root: Path, i: int, item: object) -> dict[str, Any]:
    where = f"attachments[{i}]"
    if not isinstance(item, dict):
        raise Invalid(f"{where} must be an object with a path or a url", code="invalid_attachments")
    extra = set(item) - _ATTACHMENT_KEYS
    if extra:
        raise Invalid(f"{where} has unknown keys {sorted(extra)}: use {sorted(_ATTACHMENT_KEYS)}", code="invalid_attachments")
    path, url = item.get("path"), item.get("url")
    if (path is None) == (url is None):
        raise Invalid(f"{where} needs exactly one of path (a file of the quest) or url", code="invalid_attachments")
    for key, value in item.items():
        if key not in ("connector_delivery", "size_bytes") and not isinstance(value, str):
            raise Invalid(f"{where}.{key} must be a string", code="invalid_attachments")
    clean = dict(item)
    if url is not None and not re.match(r"^https?://[^/\s]+", url):
        raise Invalid(f"{where}.url must be an http(s) URL", code="invalid_attachments")
    if path is not None:
        clean["path"] = _quest_file(root, path, f"{where}.path")
        if not (root / clean["path"]).is_file():
            raise Invalid(f"{where}.path {path!r} is not a file of the quest", code="attachment_not_found", path=clean["path"])
    if "extracted_text_path" in item:
        clean["extracted_text_path"] = _quest_file(root, item["extracted_text_path"], f"{where}.extracted_text_path")
    if "connector_delivery" in item:
        clean["connector_delivery"] = _hints(item["connector_delivery"], f"{where}.connector_delivery", code="invalid_attachments")
    if "size_bytes" in item and (isinstance(item["size_bytes"], bool) or not isinstance(item["size_bytes"], int)):
        raise Invalid(f"{where}.size_bytes must be an integer", code="invalid_attachments")
    return clean


def _quest_file(root: Path, value: str, field: str) -> str:
    """A path inside the quest, relative to it; the worktrees under ``.ds/worktrees/`` are
    the quest's too (a figure made on a run branch lives there)."""
    try:
        return confine_path(root, value, field)
    except Invalid as exc:
        if exc.code == "path_not_allowed":
            raw = Path(value)
            rel = PurePosixPath(*(raw if raw.is_absolute() else root / raw).resolve().relative_to(root.resolve()).parts)
            if rel.parts[:2] == (".ds", "worktrees") and len(rel.parts) > 3:
                return str(rel)
        raise Invalid(f"{exc.message}", code="invalid_attachments", field=field) from None


def _action(i: int, item: object) -> dict[str, Any]:
    name = (item.get("type") or item.get("command")) if isinstance(item, dict) else None
    if not isinstance(item, dict) or not isinstance(name, str) or not _NAME_RE.match(name.lower()):
        raise Invalid(f"surface_actions[{i}] must be an object naming its action in type (or command), "
                      "e.g. {\"type\": \"send_notification\", \"text\": \"...\"}", code="invalid_surface_actions")  # fmt: skip
    if len(msgspec.json.encode(item)) > MAX_HINT_BYTES:
        raise Invalid(f"surface_actions[{i}] is larger than {MAX_HINT_BYTES} bytes", code="invalid_surface_actions")
    return dict(item)


def _hints(value: object, field: str, *, code: str) -> dict[str, Any]:
    """``{connector name: {settings}}`` with the names lower-cased."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(f"{field} must be an object: {{\"<connector>\": {{...}}}}", code=code)
    out: dict[str, Any] = {}
    for key, hint in value.items():
        name = str(key).strip().lower()
        if not _NAME_RE.match(name) or not isinstance(hint, dict):
            raise Invalid(f"{field}[{key!r}] must name a connector and hold an object, e.g. "
                          "{\"qq\": {\"render_mode\": \"markdown\"}}", code=code)  # fmt: skip
        if name in out:
            raise Invalid(f"{field} names connector {name!r} twice", code=code)
        out[name] = dict(hint)
    if len(msgspec.json.encode(out)) > MAX_HINT_BYTES:
        raise Invalid(f"{field} is larger than {MAX_HINT_BYTES} bytes", code=code)
    return out
