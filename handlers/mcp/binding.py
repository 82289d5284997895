"""Which quest an MCP server works on: :class:`QuestBinding`, from flags or the
environment (``DS_HOME`` + ``DS_QUEST_ID``, or ``DS_QUEST_ROOT`` inside ``DS_HOME``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ds_events.errors import Invalid
from ds_events.home import Home, Quest, validate_quest_id

__all__ = ["QuestBinding"]


@dataclass(frozen=True)
class QuestBinding:
    """The quest an MCP server acts on."""

    home: Path
    quest_id: str

    @classmethod
    def resolve(
        cls,
        *,
        home: str | os.PathLike[str] | None = None,
        quest_id: str | None = None,
        quest_root: str | os.PathLike[str] | None = None,
        environ: dict[str, str] | None = None,
    ) -> QuestBinding:
        """Flags win over the environment; a quest id or a quest root is required.

        A quest root must be ``<home>/quests/<id>`` of the home in force (so global memory
        and config stay in that home), and a quest id given beside a root must name it.
        """
        env = os.environ if environ is None else environ
        quest_id = quest_id or env.get("DS_QUEST_ID") or None
        root = quest_root or env.get("DS_QUEST_ROOT") or None
        home_path = Path(home or env.get("DS_HOME") or Home().root).expanduser()
        if root is not None:
            quest_id = _quest_of_root(Path(root), home_path, quest_id)
        if quest_id is None:
            raise Invalid("no quest given: set DS_QUEST_ID (with DS_HOME) or DS_QUEST_ROOT, or pass --quest", code="no_quest")
        return cls(home=home_path, quest_id=validate_quest_id(quest_id))

    def check(self) -> None:
        """Fail now, cheaply and with a clear message, if the quest does not exist."""
        Home(self.home).require_quest(self.quest_id)

    def open(self, actor: str) -> Quest:
        # A server started for a turn (the runner sets DS_RUN_ID) ties its events to it.
        return Home(self.home).open_quest(self.quest_id, actor=actor, run_id=os.environ.get("DS_RUN_ID") or None)


def _quest_of_root(root: Path, home: Path, quest_id: str | None) -> str:
    """The id of the quest at ``root``, which must be a quest of ``home`` (and the quest
    ``quest_id`` names, when one is given beside it)."""
    real_root = root.expanduser().resolve()
    quests = (home / "quests").resolve()
    if real_root.parent != quests:
        raise Invalid(
            f"quest root {root} is not a quest of the home {home} (expected {quests}/<quest id>): set DS_HOME to the home that holds it",
            code="quest_outside_home",
        )
    if quest_id is not None and quest_id != real_root.name:
        raise Invalid(
            f"DS_QUEST_ID={quest_id!r} and DS_QUEST_ROOT={root} name different quests: give one of them",
            code="conflicting_quest",
        )
    return real_root.name
