"""A namespace's state (a :class:`NamespaceState` dataclass, the server's lifespan state
reaches it): built once, after the quest opens; closed when the server stops, before the
quest; a failure to build it is every call's answer. And the bash namespace's state: the
sessions it found dead when it started.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from dataclasses import dataclass, field

import mcp

from ds_events.bash import procs
from ds_events.errors import Conflict
from ds_events.home import Home, Quest
from ds_events.services import tool_calls
from ds_events.services.research.commands import GetQuestState
from handlers.mcp import READ_ONLY, Namespace, NamespaceState, QuestBinding, ToolContext
from handlers.mcp.bash_exec import BashState

from .bash_exec.support import group_is_gone, session_of, start, wait_until
from .mcp_support import unstructured_reason


@dataclass
class _Probe(NamespaceState):
    """A state that says when and where it was built and closed."""

    quest: Quest
    built_in: str = field(default_factory=lambda: threading.current_thread().name)

    def close(self) -> None:
        # Logged through the quest: this fails if the quest was closed first.
        tool_calls.record_call(self.quest, namespace="probe", tool="state_closed", arguments={}, result={})


def _probe_server(home: Home, opened: list[_Probe], *, fail: bool = False) -> mcp.Client:
    def open_state(quest: Quest, actor: str) -> _Probe:
        if fail:
            raise Conflict("the probe's state cannot be built", code="probe_unavailable")
        opened.append(_Probe(quest=quest))
        return opened[-1]

    ns = Namespace("probe", QuestBinding(home=home.root, quest_id="q1"), instructions="probe", open_state=open_state)

    @ns.tool(READ_ONLY)
    def built_in(tc: ToolContext[_Probe], cmd: GetQuestState) -> dict[str, str]:
        """Where the state was built. Returns: built_in."""
        return {"built_in": tc.state.built_in}

    return mcp.Client(ns.server())


async def test_the_state_is_built_once_in_the_opening_thread_and_closed_before_the_quest(home: Home, quest: Quest) -> None:
    opened: list[_Probe] = []
    async with _probe_server(home, opened) as client:
        answers = [await client.call_tool("built_in", {}) for _ in range(3)]
    assert [a.structured_content for a in answers] == [{"built_in": "open q1"}] * 3
    assert len(opened) == 1
    records = [e for e in quest.log.read(0) if e.type == "tool.call_finished"]
    # Three calls, then the state's closing record: the quest was still open.
    assert [(e.namespace, e.tool) for e in records] == [("probe", "built_in")] * 3 + [("probe", "state_closed")]


async def test_a_state_that_cannot_be_built_is_every_calls_answer_and_nothing_is_written(home: Home, quest: Quest) -> None:
    before = quest.log.last_seq
    async with _probe_server(home, [], fail=True) as client:
        answers = [await client.call_tool("built_in", {}) for _ in range(2)]
    for answer in answers:
        assert unstructured_reason(answer) is None, unstructured_reason(answer)
        assert json.loads(answer.content[0].text)["error"] == "probe_unavailable"
    # Not even a call record: the call log needs the namespace opened, and says why not on stderr.
    assert quest.log.last_seq == before


async def test_the_bash_state_names_the_sessions_found_dead_when_the_server_started(home: Home, quest: Quest) -> None:
    session = start(quest, "trap '' HUP; echo up; exec sleep 300")
    wait_until(lambda: "up" in (quest.root / session.log_path).read_text(), what="the trap to be set")
    os.kill(session.monitor_pid, signal.SIGKILL)
    wait_until(lambda: not procs.is_alive(session.monitor_pid, session.monitor_start_time), what="the monitor to die")

    tc = ToolContext(QuestBinding(home=home.root, quest_id="q1"), "mcp:bash_exec", BashState.open)
    try:
        assert tc.state.lost_at_start == [session.id]
    finally:
        tc.close()
    assert session_of(quest, session.id).status == "lost"
    wait_until(lambda: group_is_gone(session.pgid), what="the orphaned group to be killed and reaped")
    # A second server finds nothing more to mark.
    again = ToolContext(QuestBinding(home=home.root, quest_id="q1"), "mcp:bash_exec", BashState.open)
    try:
        assert again.state.lost_at_start == []
    finally:
        again.close()
