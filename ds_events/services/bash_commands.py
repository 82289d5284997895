"""The requests and answers of the `bash_exec` service.

One command per operation (:class:`StartSession`, :class:`AwaitSession`,
:class:`ReadOutput`, :class:`KillSession`, :class:`ListSessions`, :class:`GetSession`),
and :class:`BashExec`, the one-tool form the MCP namespace and the daemon's route take:
a ``mode`` plus the union of the others' arguments. Answers are Structs: a session's
record (:class:`~projections.bash_sessions.Session`), :class:`OutputPage`,
:class:`SessionList`, and :class:`BashExecResult` for the one-tool form.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, UnsetType

from projections.bash_sessions import Session

from .commands import Command, Result

__all__ = [
    "MODES",
    "BashExec",
    "StartSession",
    "GetSession",
    "AwaitSession",
    "ReadOutput",
    "KillSession",
    "ListSessions",
    "OutputPage",
    "SessionList",
    "BashExecResult",
]

MODES = ("detach", "await", "read", "kill", "list", "history")

# Descriptions shared by the one-tool form and the per-operation commands.
_ID = "The session, e.g. \"bx-1a2b3c4d\"."
_COMMAND = "The shell command (bash -c) to start."
_WORKDIR = (
    "Where to start: a directory inside the quest (relative to its root) or inside one of its git worktrees. "
    "When null: the quest root."
)
_ENV = "Extra environment variables, {\"NAME\": \"value\"}."
_TIMEOUT = "> 0: the session is terminated after that long (status terminated, reason timeout). When null: no limit."
_WAIT = "Seconds to wait, at most 1800. When null: 60."
_TAIL = "The last N lines (1-2000)."
_AFTER = "Lines after this line number."
_BEFORE = "The `limit` lines before this line number."
_FORCE = "Send KILL at once instead of TERM then KILL after the grace period."
_REASON = "Recorded with the kill. When null: \"user_stop\"."


# -- the one-tool form ------------------------------------------------------------------


class BashExec(Command):
    command: Annotated[str, Meta(description=_COMMAND + " Only for detach, and for await without id.")] = ""
    mode: Annotated[str, Meta(description="detach | await | read | kill | list | history.")] = "detach"
    id: Annotated[str | None, Meta(description="The session, e.g. \"bx-1a2b3c4d\": for await (of a running session), read and kill.")] = None
    workdir: Annotated[str | None, Meta(description=_WORKDIR)] = None
    env: Annotated[dict[str, str] | None, Meta(description=_ENV)] = None
    timeout_seconds: Annotated[float | None, Meta(description=_TIMEOUT)] = None
    wait_timeout_seconds: Annotated[float | None, Meta(description="await: seconds to wait, at most 1800. When null: 60.")] = None
    tail: Annotated[int | None, Meta(description="read: the last N lines (1-2000).")] = None
    after_seq: Annotated[int | None, Meta(description="read: lines after this line number.")] = None
    before_seq: Annotated[int | None, Meta(description="read: the `limit` lines before this line number.")] = None
    limit: Annotated[int | None, Meta(description=(
        "read: 1-2000 lines (when null: 200 with after_seq/before_seq); history: sessions (when null: 50)."
    ))] = None
    force: Annotated[bool, Meta(description="kill: send KILL at once instead of TERM then KILL after the grace period.")] = False
    wait: Annotated[bool, Meta(description="kill: wait for the session to end.")] = False
    reason: Annotated[str | None, Meta(description="kill: recorded with the kill. When null: \"user_stop\".")] = None


class BashExecResult(Result):
    """What the one-tool form answers. Fields a mode does not fill are left out (UNSET),
    while a relevant field that has no value is said as null (``first_seq`` of an empty
    log, ``omitted`` of a log read whole)."""

    mode: str
    id: str | UnsetType = UNSET
    status: str | UnsetType = UNSET
    done: bool | UnsetType = UNSET
    session: Session | UnsetType = UNSET
    output: str | UnsetType = UNSET
    first_seq: int | None | UnsetType = UNSET
    last_seq: int | None | UnsetType = UNSET
    total_lines: int | UnsetType = UNSET
    omitted: list[int] | None | UnsetType = UNSET
    sessions: list[Session] | UnsetType = UNSET
    counts: dict[str, int] | UnsetType = UNSET
    message: str | UnsetType = UNSET
    next: str | UnsetType = UNSET


# -- one command per operation ----------------------------------------------------------


class StartSession(Command):
    """Start a command detached; the answer is its session (status ``running``)."""

    command: Annotated[str, Meta(description=_COMMAND)]
    workdir: Annotated[str | None, Meta(description=_WORKDIR)] = None
    env: Annotated[dict[str, str] | None, Meta(description=_ENV)] = None
    timeout_seconds: Annotated[float | None, Meta(description=_TIMEOUT)] = None


class GetSession(Command):
    """One session's current record."""

    id: Annotated[str, Meta(description=_ID)]


class AwaitSession(Command):
    """Wait until a session ends or the wait times out; the answer is its record."""

    id: Annotated[str, Meta(description=_ID)]
    wait_timeout_seconds: Annotated[float | None, Meta(description=_WAIT)] = None


class ReadOutput(Command):
    """A session's output: whole when small, else head and tail; or a window by line number."""

    id: Annotated[str, Meta(description=_ID)]
    tail: Annotated[int | None, Meta(description=_TAIL)] = None
    after_seq: Annotated[int | None, Meta(description=_AFTER)] = None
    before_seq: Annotated[int | None, Meta(description=_BEFORE)] = None
    limit: Annotated[int | None, Meta(description="1-2000 lines. When null: 200 with after_seq/before_seq.")] = None


class KillSession(Command):
    """Stop a session's whole process group."""

    id: Annotated[str, Meta(description=_ID)]
    force: Annotated[bool, Meta(description=_FORCE)] = False
    wait: Annotated[bool, Meta(description="Wait (the grace period + 10 s at most) for the session to end.")] = False
    reason: Annotated[str | None, Meta(description=_REASON)] = None


class ListSessions(Command):
    """Running sessions (or every session, newest first) and the count of each status."""

    include_ended: Annotated[bool, Meta(description="Every session, newest first, instead of the running ones.")] = False
    limit: Annotated[int | None, Meta(description="With include_ended: at most this many (1-2000). When null: 50.")] = None


# -- answers ----------------------------------------------------------------------------


class OutputPage(Result):
    """Lines ``[seq, text]`` of a session's output and where they sit in its log."""

    session: Session
    lines: list[tuple[int, str]]
    first_seq: int | None
    last_seq: int | None
    total_lines: int
    omitted: tuple[int, int] | None  # (first, last) seq left out of a preview
    output: str  # the lines as text, with a marker where the preview left lines out


class SessionList(Result):
    sessions: list[Session]
    counts: dict[str, int]
