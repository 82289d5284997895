"""The claim audit of a quest: its manuscript found and read, audited against its log.

Until the paper bundle exists, the manuscript is a file of the quest: the one named
(confined to the quest), else ``paper/manuscript.md``, ``paper/main.md``,
``paper/manuscript.tex`` or ``paper/main.tex``, the first that exists."""

from __future__ import annotations

from ds_events.artifacts.validate import confine_path
from ds_events.errors import Invalid, NotFound
from ds_events.home import Quest

from .commands import ClaimAudit
from .resolve import audit_manuscript
from .sources import quest_sources

__all__ = ["MANUSCRIPT_PATHS", "find_manuscript", "audit_quest"]

MANUSCRIPT_PATHS = ("paper/manuscript.md", "paper/main.md", "paper/manuscript.tex", "paper/main.tex")
_MAX_BYTES = 4 * 1024 * 1024


def find_manuscript(quest: Quest, path: str | None = None) -> tuple[str, str]:
    """``(path relative to the quest, text)`` of the manuscript: ``path`` if given
    (refused outside the quest: ``path_outside_quest``), else the first of
    :data:`MANUSCRIPT_PATHS` that exists (``no_manuscript`` if none)."""
    if path is not None:
        rel = confine_path(quest.root, path, "manuscript")
        if not (quest.root / rel).is_file():
            raise NotFound(f"no manuscript at {rel} in quest {quest.id}", code="no_manuscript", path=rel)
    else:
        found = next((p for p in MANUSCRIPT_PATHS if (quest.root / p).is_file()), None)
        if found is None:
            raise NotFound(
                f"quest {quest.id} has no manuscript ({', '.join(MANUSCRIPT_PATHS)}): give one with --manuscript PATH",
                code="no_manuscript", looked_at=list(MANUSCRIPT_PATHS),
            )  # fmt: skip
        rel = confine_path(quest.root, found, "manuscript")  # a planted link must not lead outside
    data = (quest.root / rel).read_bytes()
    if len(data) > _MAX_BYTES:
        raise Invalid(f"the manuscript {rel} is over {_MAX_BYTES} bytes", code="manuscript_too_large", path=rel)
    try:
        return rel, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid(f"the manuscript {rel} is not UTF-8 text (byte {exc.start})", code="manuscript_not_text", path=rel) from None


def audit_quest(quest: Quest, manuscript: str | None = None) -> ClaimAudit:
    """Audit the quest's manuscript (:func:`find_manuscript`) against its log."""
    rel, text = find_manuscript(quest, manuscript)
    return audit_manuscript(text, quest_sources(quest), path=rel)
