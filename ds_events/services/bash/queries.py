"""Reading durable shell sessions: one session's record, its output, the list.

Each read first reconciles what it is about (a session recorded running whose monitor
is gone is ended as ``lost``), so no reader is told "running" by a dead session.
Output is read from the numbered line log with memory bounded by what is returned,
whatever the log's size (:mod:`ds_events.bash.linelog`).
"""

from __future__ import annotations

from pathlib import Path

from ds_events.bash import linelog
from ds_events.bash.checks import check_count, check_seq
from ds_events.errors import Invalid
from ds_events.home import Quest
from projections.bash_sessions import Session, status_counts

from .commands import (
    DEFAULT_WINDOW_LINES,
    PREVIEW_HEAD_LINES,
    PREVIEW_TAIL_LINES,
    PREVIEW_WHOLE_LINES,
    GetSession,
    ListSessions,
    OutputPage,
    ReadOutput,
    SessionList,
    SessionsSummary,
    check_kind,
)
from .sessions import reconcile, session_of

__all__ = ["get_session", "read_output", "check_window", "list_sessions"]

_HISTORY_LINES = 50  # sessions a list of every session answers when no limit is given


def get_session(quest: Quest, cmd: GetSession) -> Session:
    """The session's current record; :class:`NotFound` for an unknown id."""
    return session_of(quest, cmd.id)


def read_output(quest: Quest, cmd: ReadOutput) -> OutputPage:
    """A session's output lines and its record.

    No window: the whole log up to 2000 lines, else its first 500 and last 1500 lines
    (the middle is counted, not returned). ``tail=N``: the last N lines. ``after_seq`` / ``before_seq`` (with
    ``limit``, default 200): a page of lines by number; with ``tail_limit=N`` instead of
    ``limit``, the last N lines of that window (of the whole log without bounds).
    """
    session = session_of(quest, cmd.id)
    check_window(cmd)
    tail, limit, tail_limit = cmd.tail, cmd.limit, cmd.tail_limit
    after_seq, before_seq = cmd.after_seq, cmd.before_seq
    if session.status == "running":
        reconcile(quest, only=[session.id])  # a reader must not be told "running" by a dead session
        session = session_of(quest, session.id)
    path = quest.root / session.log_path
    if not path.is_file():
        found = linelog.LogSlice()
    elif tail is not None:
        found = linelog.tail(path, tail)
    elif tail_limit is not None:
        found = _last_of_window(path, after_seq, before_seq, tail_limit)
    elif after_seq is not None or before_seq is not None:
        found = linelog.window(path, after_seq=after_seq, before_seq=before_seq, limit=limit or DEFAULT_WINDOW_LINES)
    elif limit is not None:
        found = linelog.head(path, limit)
    else:
        found = linelog.preview(path, full_max_lines=PREVIEW_WHOLE_LINES, head_lines=PREVIEW_HEAD_LINES,
                                tail_lines=PREVIEW_TAIL_LINES)
    return OutputPage(
        session=session,
        lines=found.lines,
        first_seq=found.first_seq,
        last_seq=found.last_seq,
        total_lines=found.total_lines,
        omitted=found.omitted,
        output=found.text(),
    )


def check_window(cmd: ReadOutput) -> None:
    """Refuse a read window that no log could answer (needs no state: checked first)."""
    tail = check_count("tail", cmd.tail)
    limit = check_count("limit", cmd.limit)
    tail_limit = check_count("tail_limit", cmd.tail_limit)
    after_seq = check_seq("after_seq", cmd.after_seq)
    before_seq = check_seq("before_seq", cmd.before_seq)
    if tail is not None and (after_seq is not None or before_seq is not None or tail_limit is not None):
        raise Invalid("use either tail or after_seq/before_seq/tail_limit, not both", code="conflicting_window")
    if tail_limit is not None and limit is not None:
        raise Invalid("use either tail_limit (the last lines of the window) or limit (the first), not both",
                      code="conflicting_window")  # fmt: skip
    if after_seq is not None and before_seq is not None and before_seq <= after_seq + 1:
        raise Invalid("before_seq must be greater than after_seq + 1", code="empty_window")


def list_sessions(quest: Quest, cmd: ListSessions) -> SessionList:
    """Sessions (running only, or all newest first; of one ``kind`` if given), the count
    of each status and the :class:`SessionsSummary` of the whole quest."""
    limit = check_count("limit", cmd.limit)
    kind = check_kind(cmd.kind)
    reconcile(quest)
    state = quest.state("bash_sessions")
    sessions = list(state.sessions.values())
    counts = status_counts(state)
    summary = SessionsSummary(session_count=len(sessions), running_count=counts["running"])
    if kind is not None:
        sessions = [s for s in sessions if s.kind == kind]
    if cmd.include_ended:
        sessions.reverse()
        sessions = sessions[: limit or _HISTORY_LINES]
    else:
        sessions = [s for s in sessions if s.status == "running"]
    return SessionList(sessions=sessions, counts=counts, summary=summary)


# -- private helpers -----------------------------------------------------------------


def _last_of_window(path: Path, after_seq: int | None, before_seq: int | None, n: int) -> linelog.LogSlice:
    """The last ``n`` lines with ``after_seq < seq < before_seq`` (either bound optional)."""
    total, _size = linelog.count(path)
    stop = total + 1 if before_seq is None else min(before_seq, total + 1)
    start_after = max(after_seq or 0, stop - 1 - n)
    return linelog.window(path, after_seq=start_after, before_seq=stop, limit=n)
