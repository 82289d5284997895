"""The crash matrix for turns: kill -9 the host (``ds run``, ``ds serve``) — or, with
``runner.mcp_transport: stdio``, the MCP server the agent started — at every named
write boundary of a turn (:data:`ds_events.crashpoints.POINTS`), start a host again,
and check what it makes of it: the crashed turn is recorded interrupted exactly once,
nothing of the case still runs, no bash session, commit or message delivery is
duplicated, every queued message is delivered once, ``ds verify`` passes and ``ds
replay`` of the log alone writes the live files byte for byte. :mod:`tests.runtime.crash_support` runs a case and defines
"duplicated" precisely.

The cases run a few at a time (each is a handful of real processes); each point is its
own test, asserting its own row. ``DS_CRASH_TABLE=<file>`` writes the table of all rows
run (point x outcome).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import pytest

from ds_events.crashpoints import POINTS
from tests.runtime.crash_support import Case, Outcome, run_case, table

# Under xdist every test here runs on one worker: the module fixtures run the whole matrix
# once, and a second worker would run it all again.
pytestmark = pytest.mark.xdist_group("crash_matrix")

MID_AWAIT = "host.recorder.tool_call.after_append:3"  # the agent awaits its bash job
MCP_POINTS = [p for p in POINTS if p.startswith("mcp.")]  # in the namespaces' code


def stalling(at: str) -> Case:
    """A turn that waits for the user, silent: the stall watch interrupts it (1.5 s)."""
    return Case(at=at, script="wait", stall_seconds=1.5, max_attempts=1)


CASES = [
    Case(at="host.claim.before_prompt_write"),
    Case(at="host.claim.after_prompt_write"),
    Case(at="host.claim.before_append"),
    Case(at="host.claim.after_append"),
    Case(at="host.runner.before_spawn"),
    Case(at="host.runner.before_process_event"),
    Case(at="host.runner.after_process_event"),
    Case(at="host.runner.after_prompt_fed"),
    Case(at="host.recorder.agent_message.before_append"),
    Case(at="host.recorder.agent_message.after_append:2"),
    Case(at="host.recorder.reasoning.after_append"),
    Case(at="host.recorder.tool_call.before_append:2"),  # the bash job's start
    Case(at="host.recorder.tool_call.after_append:2"),  # mid call: the server starts the job
    Case(at=MID_AWAIT),
    Case(at="host.recorder.tool_call.after_append:4"),  # mid checkpoint
    Case(at="host.recorder.tool_result.before_append:4"),
    Case(at="host.recorder.tool_result.after_append:2"),  # after the job started
    Case(at="host.recorder.tool_result.after_append:6"),
    Case(at="host.scheduler.before_finish"),
    Case(at="host.finish.before_append"),
    Case(at="host.finish.after_append"),
    Case(at="host.scheduler.after_finish"),
    Case(at="host.finish.retry_built", script="retry"),
    Case(at="host.finish.retry_after_append", script="retry"),
    Case(at="host.finish.before_append:2", script="retry"),  # the retry's own end
    Case(at="host.recover.before_kill", first=MID_AWAIT),
    Case(at="host.recover.before_append", first=MID_AWAIT),
    Case(at="host.recover.after_append", first=MID_AWAIT),
    stalling("host.stop.before_interrupt"),
    stalling("host.stop.before_signal"),
    stalling("host.stop.after_signal"),
    # the namespaces' write boundaries, served by the host (http, the default: the host
    # dies) and by the MCP servers the agent started (stdio: the server dies, the host
    # lives); no retry: a retry re-runs a failed attempt's steps
    *[Case(at=point, max_attempts=1, transport=transport) for point in MCP_POINTS for transport in ("http", "stdio")],
    # ds serve hosting the turn
    Case(at="host.claim.after_append", host="serve"),
    Case(at=MID_AWAIT, host="serve"),
    Case(at="host.finish.before_append", host="serve"),
    Case(at="host.stop.before_signal", host="serve", script="wait", max_attempts=1, pause_over_http=True),
    Case(at="mcp.checkpoint.after_commit", host="serve", max_attempts=1),
    Case(at="mcp.checkpoint.after_commit", host="serve", max_attempts=1, transport="stdio"),
]
FAST = [Case(at="host.claim.after_append"), Case(at=MID_AWAIT), Case(at="host.finish.before_append")]
WORKERS = 3  # cases at once: each is mostly processes waiting on each other

_done: dict[Case, Outcome] = {}


def _outcomes(cases: list[Case], base: Path) -> dict[Case, Outcome]:
    todo = [c for c in cases if c not in _done]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {pool.submit(run_case, c, base / c.id.replace(":", "_")): c for c in todo}
        for future in as_completed(futures):
            _done[futures[future]] = future.result()
            if os.environ.get("DS_CRASH_TABLE"):  # rewritten as rows come in
                Path(os.environ["DS_CRASH_TABLE"]).write_text(table([_done[c] for c in CASES if c in _done]) + "\n")
    return {c: _done[c] for c in cases}


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory) -> dict[Case, Outcome]:
    return _outcomes(FAST, tmp_path_factory.mktemp("crash"))


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[Case, Outcome]:
    return _outcomes(CASES, tmp_path_factory.mktemp("crash"))


def test_the_matrix_covers_every_crash_point_and_at_least_thirty() -> None:
    assert {c.point for c in CASES} == set(POINTS)
    assert len(POINTS) >= 30
    assert set(FAST) <= set(CASES)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", FAST, ids=lambda c: c.id)
def test_a_host_killed_at_a_turn_boundary_leaves_a_turn_a_new_host_records_interrupted_once(case: Case, fast: dict[Case, Outcome]) -> None:
    outcome = fast[case]
    assert outcome.reached and outcome.killed == "host -9"
    assert outcome.running_at_crash is not None and outcome.interrupted == 1
    assert outcome.problems == [], table([outcome])


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the first test's setup runs the whole matrix
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_crash_point_leaves_a_quest_a_new_host_recovers_whole(case: Case, matrix: dict[Case, Outcome]) -> None:
    outcome = matrix[case]
    assert outcome.reached
    assert outcome.problems == [], table([outcome])
