"""The requests and answers of the `bash_exec` service.

One command per operation (:class:`StartSession`, :class:`AwaitSession`,
:class:`ReadOutput`, :class:`KillSession`, :class:`ListSessions`, :class:`GetSession`),
and :class:`BashExec`, the one-tool form the MCP namespace and the daemon's route take:
a ``mode`` plus the union of the others' arguments. Answers are Structs: a session's
record (:class:`~projections.bash_sessions.Session`), :class:`OutputPage`,
:class:`SessionList`, and :class:`BashExecResult` for the one-tool form. A start request,
once checked, is a :class:`~ds_events.bash.spawn.StartSpec` (what the monitor is sent).

:class:`BashExec` is the one place where the argument forms of DeepScientist's
``bash_exec`` are accepted next to ours (``command`` as an argv list, ``mode="create"``,
``start``/``tail_limit``/``order`` read windows, ``timeout_seconds`` bounding a wait);
:mod:`ds_events.services.bash.tool` turns each into the canonical operation.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, UnsetType

from ds_events.bash.spawn import StartSpec
from ds_events.errors import Invalid
from ds_events.services.commands import Command, Result
from projections.bash_sessions import Session

__all__ = [
    "Session",
    "StartSpec",
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
    "LogEntry",
    "SessionItem",
    "SessionsSummary",
    "KINDS",
    "check_kind",
    "ORDERS",
    "MAX_COMMAND_CHARS",
    "MAX_WAIT_SECONDS",
    "DEFAULT_WAIT_SECONDS",
    "DEFAULT_WINDOW_LINES",
    "MAX_REASON_CHARS",
    "MAX_KEY_CHARS",
    "PREVIEW_WHOLE_LINES",
    "PREVIEW_HEAD_LINES",
    "PREVIEW_TAIL_LINES",
    "WATCHDOG_AFTER_SECONDS",
]

# "create" is DeepScientist's name for "await" (start a command and wait for it).
MODES = ("detach", "await", "create", "read", "kill", "list", "history")
ORDERS = ("asc", "desc")
MAX_COMMAND_CHARS = 100_000
MAX_WAIT_SECONDS = 1800.0  # the longest one await (or a kill's wait) may wait
DEFAULT_WAIT_SECONDS = 60.0
DEFAULT_WINDOW_LINES = 200  # the lines a window by seq (or from a start line) answers without a limit
MAX_REASON_CHARS = 200  # a kill's reason: one line
# A read without a window (DeepScientist's defaults): the whole log up to 2000 lines,
# else its first 500 and last 1500 lines with the middle counted.
PREVIEW_WHOLE_LINES = 2000
PREVIEW_HEAD_LINES = 500
PREVIEW_TAIL_LINES = 1500
# How long a running session may go without output or progress before its answers say
# watchdog_overdue (DeepScientist's constant: a nudge to look at it, nothing is done).
WATCHDOG_AFTER_SECONDS = 1800
# What a session is: a command ("exec", every start's default) or "terminal", the name
# DeepScientist gives an interactive shell. A label recorded at start: both run alike.
KINDS = ("exec", "terminal")

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
_KEY = (
    "detach/await of a new command: your key for this start (1-200 printable characters). A key used before in "
    "this quest returns that session (reused=true), not a new one; with another command: idempotency_key_conflict. "
    "When null: every start is new."
)
MAX_KEY_CHARS = 200


# -- the one-tool form ------------------------------------------------------------------


class BashExec(Command):
    """One ``bash_exec`` request. Which arguments a mode takes is checked by the service:
    an argument the mode would not use is refused (``unexpected_argument``), never ignored."""

    command: Annotated[str | list[str], Meta(description=(
        "detach, await: the command (bash -c) to start. A string, or an argv list (each item one word, quoted; "
        "a one-item list runs as a string)."
    ))] = ""
    mode: Annotated[str, Meta(description="detach | await | read | kill | list | history; create = await. When null: detach.")] = "detach"
    id: Annotated[str | None, Meta(description=(
        "The session, e.g. \"bx-1a2b3c4d\" (await, read, kill). When null for read, or await without command: "
        "the latest session."
    ))] = None
    workdir: Annotated[str | None, Meta(description=_WORKDIR)] = None
    env: Annotated[dict[str, str] | None, Meta(description=_ENV)] = None
    timeout_seconds: Annotated[float | None, Meta(description=(
        "A new command: > 0, it is terminated after that long (reason timeout; an await waits for that end). "
        "await of an existing session, kill with wait: bounds the wait. When null: no limit."
    ))] = None
    wait_timeout_seconds: Annotated[float | None, Meta(description=(
        "await, kill with wait: seconds, at most 1800. When null: 60 for await (for a new command with "
        "timeout_seconds: that + the kill grace); for kill, the grace + 10 s."
    ))] = None
    tail: Annotated[int | None, Meta(description="read: the last N lines (1-2000); with start, N lines from start.")] = None
    start: Annotated[int | None, Meta(
        description="read: the first line (seq, from 1) of a window of `tail` (or `limit`, default 200) lines."
    )] = None
    after_seq: Annotated[int | None, Meta(description="read: lines after this line number, as `tail` entries.")] = None
    before_seq: Annotated[int | None, Meta(description="read: the `limit` lines before this line number, as `tail` entries.")] = None
    tail_limit: Annotated[int | None, Meta(description=(
        "read: the last N lines (1-2000) of the after_seq/before_seq window (of the whole log without them), "
        "as `tail` entries."
    ))] = None
    order: Annotated[str | None, Meta(description="read: asc | desc, the order of the `tail` entries. When null: asc.")] = None
    limit: Annotated[int | None, Meta(description=(
        "read: 1-2000 lines (when null: 200 with start/after_seq/before_seq); list, history: sessions "
        "(when null: every running one; 50 for history)."
    ))] = None
    force: Annotated[bool, Meta(description="kill: send KILL at once instead of TERM then KILL after the grace period.")] = False
    wait: Annotated[bool, Meta(description="kill: wait for the session to end.")] = False
    reason: Annotated[str | None, Meta(description="kill: recorded with the kill. When null: \"user_stop\".")] = None
    idempotency_key: Annotated[str | None, Meta(description=_KEY)] = None
    kind: Annotated[str | None, Meta(description=(
        "exec | terminal, any case. detach/await of a new command: recorded with it (when null: exec). "
        "list, history: only sessions of that kind (when null: all)."
    ))] = None


def check_kind(kind: str | None) -> str | None:
    """``kind`` in its stored form (lower case), or None when not given; anything but
    one of :data:`KINDS` is ``invalid_kind``."""
    if kind is None:
        return None
    folded = kind.strip().lower() if isinstance(kind, str) else kind
    if folded not in KINDS:
        raise Invalid(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}", code="invalid_kind", field="kind")
    return folded


class LogEntry(Result):
    """One output line and its number in the session's log."""

    seq: int
    line: str


class SessionItem(Session, frozen=True, kw_only=True):
    """A session as ``list`` and ``history`` answer it: its record, plus ``bash_id`` (the
    id under DeepScientist's name) and ``stop_reason`` (why it was stopped, if it was)."""

    bash_id: str
    stop_reason: str | None = None


class SessionsSummary(Result):
    """The whole quest's sessions, whatever a list or history selected: how many there
    are and how many run (DeepScientist counts ``terminating`` as running; here a session
    being stopped is still ``running`` until it ends)."""

    session_count: int
    running_count: int


class BashExecResult(Result):
    """What the one-tool form answers. Fields a mode does not fill are left out (UNSET),
    while a relevant field that has no value is said as null (``first_seq`` of an empty
    log, ``omitted`` of a log read whole, ``exit_code`` of a running session).

    ``id`` and ``bash_id`` are the same session id (``bash_id`` is the name DeepScientist's
    callers read). A read answers the text of its lines in ``log``, or, for a window by
    seq (``after_seq``, ``before_seq``, ``tail_limit``, ``order``), the lines as ``tail``
    entries ``{seq, line}``.

    Every answer about one session says where it runs (``cwd``, absolute), its ``kind``,
    its ``log_path`` (relative to the quest root), ``still_running`` and the watchdog
    (``watchdog_after_seconds``, ``watchdog_overdue``: running and silent that long). An
    answer after a wait (await, kill with wait; detach: false) says ``wait_timed_out``.
    An answer with output says which lines it holds: ``line_start``/``line_end`` (1-based,
    null without lines; a line's number is its seq, so ``seq_window_start``/``_end`` are
    the same numbers), ``has_more_before``/``has_more_after`` (lines exist before the first
    or after the last returned; ``seq_has_more_*`` alike), ``log_is_partial`` (any line of
    the log is not in the answer), and when partial ``log_truncation_notice`` and
    ``log_read_hint`` (how to read the rest); a preview (the middle left out) adds
    ``log_preview_head_lines``, ``log_preview_tail_lines`` and ``log_preview_omitted_lines``.
    """

    mode: str
    id: str | UnsetType = UNSET
    bash_id: str | UnsetType = UNSET
    status: str | UnsetType = UNSET
    exit_code: int | UnsetType | None = UNSET
    stop_reason: str | UnsetType | None = UNSET
    done: bool | UnsetType = UNSET
    session: Session | UnsetType = UNSET
    log: str | UnsetType = UNSET
    tail: list[LogEntry] | UnsetType = UNSET
    order: str | UnsetType = UNSET
    log_line_count: int | UnsetType = UNSET
    log_truncated: bool | UnsetType = UNSET
    first_seq: int | UnsetType | None = UNSET
    last_seq: int | UnsetType | None = UNSET
    omitted: list[int] | UnsetType | None = UNSET
    count: int | UnsetType = UNSET
    items: list[SessionItem] | UnsetType = UNSET
    counts: dict[str, int] | UnsetType = UNSET
    message: str | UnsetType = UNSET
    next: str | UnsetType = UNSET
    reused: bool | UnsetType = UNSET  # a start whose idempotency_key named an existing session
    summary: SessionsSummary | UnsetType = UNSET
    cwd: str | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    log_path: str | UnsetType = UNSET
    still_running: bool | UnsetType = UNSET
    wait_timed_out: bool | UnsetType = UNSET
    watchdog_after_seconds: int | UnsetType = UNSET
    watchdog_overdue: bool | UnsetType = UNSET
    line_start: int | UnsetType | None = UNSET
    line_end: int | UnsetType | None = UNSET
    has_more_before: bool | UnsetType = UNSET
    has_more_after: bool | UnsetType = UNSET
    seq_window_start: int | UnsetType | None = UNSET
    seq_window_end: int | UnsetType | None = UNSET
    seq_has_more_before: bool | UnsetType = UNSET
    seq_has_more_after: bool | UnsetType = UNSET
    log_is_partial: bool | UnsetType = UNSET
    log_truncation_notice: str | UnsetType = UNSET
    log_read_hint: str | UnsetType = UNSET
    log_preview_head_lines: int | UnsetType = UNSET
    log_preview_tail_lines: int | UnsetType = UNSET
    log_preview_omitted_lines: int | UnsetType = UNSET


# -- one command per operation ----------------------------------------------------------


class StartSession(Command):
    """Start a command detached; the answer is its session (status ``running``)."""

    command: Annotated[str, Meta(description=_COMMAND)]
    workdir: Annotated[str | None, Meta(description=_WORKDIR)] = None
    env: Annotated[dict[str, str] | None, Meta(description=_ENV)] = None
    timeout_seconds: Annotated[float | None, Meta(description=_TIMEOUT)] = None
    idempotency_key: Annotated[str | None, Meta(description=_KEY)] = None
    kind: Annotated[str, Meta(description="exec | terminal (any case): a label recorded with the session.")] = "exec"


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
    tail_limit: Annotated[int | None, Meta(description=(
        "The last N lines (1-2000) of the after_seq/before_seq window, or of the whole log without them."
    ))] = None


class KillSession(Command):
    """Stop a session's whole process group."""

    id: Annotated[str, Meta(description=_ID)]
    force: Annotated[bool, Meta(description=_FORCE)] = False
    wait: Annotated[bool, Meta(description="Wait (the grace period + 10 s at most) for the session to end.")] = False
    reason: Annotated[str | None, Meta(description=_REASON)] = None
    wait_timeout_seconds: Annotated[float | None, Meta(description=(
        "With wait: seconds to wait at most (up to 1800). When null: the grace period + 10 s."
    ))] = None


class ListSessions(Command):
    """Running sessions (or every session, newest first) and the count of each status."""

    include_ended: Annotated[bool, Meta(description="Every session, newest first, instead of the running ones.")] = False
    limit: Annotated[int | None, Meta(description="With include_ended: at most this many (1-2000). When null: 50.")] = None
    kind: Annotated[str | None, Meta(description="exec | terminal (any case): only sessions of that kind. When null: all.")] = None


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
    summary: SessionsSummary
