"""The quest domain's contract: what ``ds message`` / ``ds control`` / ``ds quest``, the
daemon's quest routes and the ACP agent take to change a quest's conversation, control,
stage and runner."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from ds_events.services.commands import Command, Result
from projections.health import Health

__all__ = [
    "PostMessage", "Control", "ChangeAnchor", "Complete", "SetRunner", "Archive", "DeleteQuest",
    "QuestSummary", "Archived", "DeletePlan",
    "ANCHORS", "CONTROL_ACTIONS", "ROLES", "MAX_MESSAGE_CHARS", "ControlAction", "Role",
]  # fmt: skip

# The stages a quest moves through (its "anchor"); every skill is named after one.
ANCHORS = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize", "decision")
ControlAction = Literal["pause", "stop", "resume"]
Role = Literal["user", "assistant", "system"]
CONTROL_ACTIONS: tuple[ControlAction, ...] = ("pause", "stop", "resume")
ROLES: tuple[Role, ...] = ("user", "assistant", "system")
MAX_MESSAGE_CHARS = 100_000


class PostMessage(Command):
    """A message to the quest's conversation (the user's, by default)."""

    text: Annotated[str, Meta(description=f"The message, at most {MAX_MESSAGE_CHARS} characters.")]
    role: Annotated[str, Meta(description="user | assistant | system.")] = "user"


class Control(Command):
    """Pause, stop or resume the quest."""

    action: Annotated[str, Meta(description="pause | stop | resume.")]
    reason: Annotated[str, Meta(description="Why, recorded with the event.")] = ""


class ChangeAnchor(Command):
    """Move the quest to another stage (anchor)."""

    anchor: Annotated[str, Meta(description="One of " + ", ".join(ANCHORS) + ".")]
    reason: Annotated[str, Meta(description="Why, recorded with the event.")] = ""


class Complete(Command):
    """Mark the quest completed."""

    summary: Annotated[str, Meta(description="What the quest found.")] = ""


class SetRunner(Command):
    """Choose the agent that runs this quest's turns (empty: the home's runner config)."""

    runner: Annotated[str, Meta(description="codex | claude | acp | scripted, or empty for the home's runner.name.")] = ""
    model: Annotated[str, Meta(description="The model the agent uses, or empty for runner.model / the agent's own.")] = ""


class Archive(Command):
    """Archive or unarchive the quest (the body of ``POST /api/quests/{id}/archive`` and
    ``/unarchive``)."""

    reason: Annotated[str, Meta(description="Why, recorded with the event.")] = ""


class DeleteQuest(Command):
    """Delete the quest for good (the body of ``DELETE /api/quests/{id}``)."""

    confirm: Annotated[bool, Meta(description="true: delete; anything else only says what would be removed.")] = False


# -- results ------------------------------------------------------------------------------


class QuestSummary(Result, kw_only=True):
    """A quest as its list row shows it (``GET /api/quests``, the page's quest list)."""

    quest_id: str
    title: str
    status: str  # new | active | paused | stopped | completed
    anchor: str
    last_seq: int
    updated_at: str  # the last event's time
    open_requests: int  # blocking interactions still waiting for the user
    health: Health  # what the quest is doing now (projections.health)
    archived: bool = False  # hidden from the list unless asked for (?archived=true, --all)


class Archived(Result, kw_only=True):
    """What ``ds quest archive|unarchive`` and their routes answer."""

    quest_id: str
    archived: bool
    seq: int  # the quest.archived / quest.unarchived event


class DeletePlan(Result, kw_only=True):
    """What deleting a quest removes (before: what it would remove; after: what it did)."""

    quest_id: str
    deleted: bool  # False: a plan only, nothing removed
    root: str  # the quest directory: its git repository, files and log (file store)
    store: str  # "file" or the database (its rows for the quest are removed)
    events: int  # the log's events
    bash_sessions: int  # shell sessions the quest ever started
    running_bash_sessions: list[str]  # killed first
    git_repo: bool  # the quest directory is a git repository
    witness: str | None  # $DS_HOME/.ds/heads/<quest>.head, when there is one
    registry_entries: list[str]  # baselines it published to the home's registry: kept there
