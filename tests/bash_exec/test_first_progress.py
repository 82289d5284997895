"""The first ``__DS_PROGRESS__`` line of a session is recorded (issue 24 part 8: a
newcomer saw a session's first report missing). What lost it: the monitor reads the
command's output only once it has started (its imports after "go"), so lines written
meanwhile arrive in one read, and "latest wins" kept only the last report of that read.
Under the default interval (config absent: 5 s between reports) the first report goes
out at once and a burst after it is folded into the latest; through the service and through the agent's ``bash_exec`` tool
(await and detach); as the command's very first output, written before the monitor is
told to go, and as a last line without a newline."""

from __future__ import annotations

from ds_events.home import Quest

from .support import bash_events, call, client_for, session_of, start, wait_until

FIRST_THEN_BURST = (
    "echo '__DS_PROGRESS__ {\"step\": 1}'; sleep 0.3; echo '__DS_PROGRESS__ {\"step\": 2}'; "
    "echo '__DS_PROGRESS__ {\"step\": 3}'; sleep 0.3"
)


def _progress(quest: Quest, session_id: str) -> list[tuple[int, dict[str, object]]]:
    return [(e.line, e.data) for e in bash_events(quest, session_id) if e.type == "bash.progress"]


def test_a_sessions_first_progress_line_is_recorded_and_a_burst_after_it_ends_with_the_latest(quest: Quest) -> None:
    session = start(quest, FIRST_THEN_BURST)
    wait_until(lambda: session_of(quest, session.id).status != "running", timeout=60, what="the session to end")
    reports = _progress(quest, session.id)
    assert reports[0] == (1, {"step": 1}), reports  # the first line, at once
    assert reports[-1] == (3, {"step": 3}), reports  # the burst: its latest, at the end
    assert session_of(quest, session.id).progress == {"step": 3}


def test_a_first_progress_line_without_a_newline_at_the_end_is_recorded(quest: Quest) -> None:
    session = start(quest, "printf '__DS_PROGRESS__ {\"done\": 1}'")
    wait_until(lambda: session_of(quest, session.id).status != "running", timeout=60, what="the session to end")
    assert _progress(quest, session.id) == [(1, {"done": 1})]


async def test_the_first_progress_line_is_recorded_when_the_agent_starts_the_session(quest: Quest) -> None:
    async with client_for(quest) as c:
        awaited = await call(c, command=FIRST_THEN_BURST, mode="await", wait_timeout_seconds=30)
        detached = await call(c, command=FIRST_THEN_BURST, mode="detach")
    wait_until(lambda: session_of(quest, detached["id"]).status != "running", timeout=60, what="the session to end")
    for sid in (awaited["id"], detached["id"]):
        reports = _progress(quest, sid)
        assert reports[0] == (1, {"step": 1}) and reports[-1] == (3, {"step": 3}), (sid, reports)
