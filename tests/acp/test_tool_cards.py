"""One ACP card per tool call: the agent's view (``runner.tool_*``) and our server's record
(``tool.call_*``) of the same call fold under one ``toolCallId``, whichever comes first,
with the result; the pairing rule of :mod:`projections.acp_cards`, case by case."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from acp.schema import SessionNotification

from ds_events.events import Event
from ds_events.events.bash import BashProgress, BashSessionExited, BashSessionStarted
from ds_events.events.runner import RunnerToolCall, RunnerToolResult, TurnFinished
from ds_events.events.tool import ToolCallFinished, ToolCallStarted
from projections.acp import Notifier, from_notification

RUN = "run-1"


def stamp(events: list[Event], run_id: str | None = RUN) -> list[Event]:
    """The events with seqs and ids as a log would give them (the runner's and the
    MCP server's both carry the turn's run id)."""
    out = []
    for n, e in enumerate(events, 1):
        run = e.run_id if e.run_id is not None else run_id
        out.append(type(e)(**{**_fields(e), "seq": n, "id": f"e{n}", "ts": "2026-12-02T04:00:00Z", "run_id": run}))
    return out


def _fields(e: Event) -> dict[str, Any]:
    return {f: getattr(e, f) for f in e.__struct_fields__}


def cards(events: list[Event]) -> dict[str, list[dict[str, Any]]]:
    """Updates of tool-call kinds by toolCallId, each validated by the SDK."""
    notifier = Notifier("s")
    by_card: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        note = json.loads(json.dumps(notifier.notification(event)))
        SessionNotification.model_validate(note["params"])
        assert from_notification(note) == event  # nothing dropped
        update = note["params"]["update"]
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            by_card.setdefault(update["toolCallId"], []).append(update)
    return by_card


def one_card(events: list[Event]) -> list[dict[str, Any]]:
    by_card = cards(events)
    assert len(by_card) == 1, by_card
    (updates,) = by_card.values()
    assert [u["sessionUpdate"] for u in updates] == ["tool_call"] + ["tool_call_update"] * (len(updates) - 1)
    return updates


WRITE_ARGS = {"kind": "knowledge", "title": "Warmup", "body": "helps"}
RUNNER_CALL = RunnerToolCall(call_id="item_4", tool="memory.write", server="memory", arguments=WRITE_ARGS)
RUNNER_RESULT = RunnerToolResult(call_id="item_4", status="ok", output={"status": "written", "id": "k-1"})
RECORD = ToolCallFinished(call_id="tc-9", namespace="memory", tool="write", status="ok", arguments=WRITE_ARGS,
                          result={"status": "written", "id": "k-1"})  # fmt: skip


# Every order of the three (a runner's result never precedes its own call).
ORDERS = [o for o in itertools.permutations([0, 1, 2]) if o.index(0) < o.index(1)]


@pytest.mark.parametrize("order", ORDERS, ids=str)
def test_the_agents_view_and_our_record_of_a_call_are_one_card_in_any_order(order) -> None:
    halves = [RUNNER_CALL, RUNNER_RESULT, RECORD]
    updates = one_card(stamp([halves[i] for i in order]))
    assert updates[0]["title"] == "memory.write" and updates[0]["kind"] == "edit"
    assert updates[-1]["status"] == "completed"
    assert any(u.get("rawOutput", {}).get("result") == {"status": "written", "id": "k-1"} for u in updates)
    texts = [c["content"]["text"] for u in updates for c in u.get("content", [])]
    assert texts and all("written" in t for t in texts)


def test_a_done_card_does_not_go_back_to_in_progress_and_failure_wins() -> None:
    refused = ToolCallFinished(call_id="tc-1", namespace="memory", tool="write", status="error", arguments={"title": ""},
                               error_code="missing_title", error_message="a card needs a title")  # fmt: skip
    late_call = RunnerToolCall(call_id="c1", tool="memory.write", server="memory", arguments={"title": ""})
    ok_result = RunnerToolResult(call_id="c1", status="ok", output={"x": 1})
    updates = one_card(stamp([refused, late_call, ok_result]))
    assert [u["status"] for u in updates] == ["failed", "failed", "failed"]
    assert updates[0]["content"][0]["content"]["text"] == json.dumps(
        {"error": "missing_title", "message": "a card needs a title"}
    )


def test_two_calls_of_one_tool_pair_by_their_arguments_whatever_the_order() -> None:
    a = RunnerToolCall(call_id="a", tool="memory.search", server="memory", arguments={"query": "x"})
    b = RunnerToolCall(call_id="b", tool="memory.search", server="memory", arguments={"query": "y"})
    rec_b = ToolCallFinished(call_id="tc-b", namespace="memory", tool="search", status="ok", arguments={"query": "y"},
                             result={"count": 2})  # fmt: skip
    rec_a = ToolCallFinished(call_id="tc-a", namespace="memory", tool="search", status="error", arguments={"query": "x"},
                             error_code="boom")  # fmt: skip
    by_card = cards(stamp([a, b, rec_b, rec_a]))
    assert set(by_card) == {f"{RUN}:a", f"{RUN}:b"}
    assert by_card[f"{RUN}:a"][-1]["status"] == "failed" and by_card[f"{RUN}:b"][-1]["status"] == "completed"


def test_env_values_the_record_redacted_still_pair_by_arguments_and_else_the_oldest_by_name() -> None:
    older = RunnerToolCall(call_id="c0", tool="bash_exec.bash_exec", server="bash_exec", arguments={"command": "false"})
    call = RunnerToolCall(call_id="c1", tool="bash_exec.bash_exec", server="bash_exec",
                          arguments={"command": "true", "env": {"TOKEN": "s3cret"}, "mode": "detach"})  # fmt: skip
    record = ToolCallFinished(call_id="tc1", namespace="bash_exec", tool="bash_exec", status="ok",
                              arguments={"command": "true", "env": {"TOKEN": "<redacted>"}, "mode": "detach"})  # fmt: skip
    rewritten = ToolCallFinished(call_id="tc0", namespace="bash_exec", tool="bash_exec", status="ok",
                                 arguments={"_truncated_json": "{\"command\": \"fal"})  # fmt: skip
    by_card = cards(stamp([older, call, record, rewritten]))
    # The record pairs with the call of the same arguments (env by its keys), not the
    # older one; the record whose arguments were cut pairs with the oldest left by name.
    assert set(by_card) == {f"{RUN}:c0", f"{RUN}:c1"}
    assert by_card[f"{RUN}:c1"][-1]["rawInput"]["env"] == {"TOKEN": "<redacted>"}
    assert by_card[f"{RUN}:c0"][-1]["rawInput"] == {"_truncated_json": '{"command": "fal'}


def test_calls_are_paired_only_within_one_turn_and_only_for_our_tools() -> None:
    elsewhere = ToolCallFinished(call_id="tc-x", namespace="memory", tool="write", status="ok", arguments=WRITE_ARGS)
    other_turn = stamp([RUNNER_CALL], run_id="run-2")[0]
    shell = RunnerToolCall(call_id="sh", tool="shell", arguments={"command": "ls"})
    events = [*stamp([elsewhere], run_id=None), other_turn, *stamp([shell, RECORD])[0:2]]
    events = [type(e)(**{**_fields(e), "seq": n}) for n, e in enumerate(events, 1)]
    by_card = cards(events)
    assert set(by_card) == {"tc-x", "run-2:item_4", f"{RUN}:sh", "tc-9"}
    assert all(len(u) == 1 and u[0]["sessionUpdate"] == "tool_call" for u in by_card.values())


def test_an_awaited_bash_exec_and_the_session_it_starts_are_one_card() -> None:
    args = {"command": "python train.py", "mode": "await"}
    events = stamp([
        RunnerToolCall(call_id="c7", tool="bash_exec.bash_exec", server="bash_exec", arguments=args),
        ToolCallStarted(call_id="tc-7", namespace="bash_exec", tool="bash_exec", arguments=args),
        BashSessionStarted(session_id="bs-1", command="python train.py", workdir=".", pid=10, pgid=10, monitor_pid=9),
        BashProgress(session_id="bs-1", line=3, data={"step": 1}),
        BashSessionExited(session_id="bs-1", status="completed", exit_code=0),
        ToolCallFinished(call_id="tc-7", namespace="bash_exec", tool="bash_exec", status="ok", started=True),
        RunnerToolResult(call_id="c7", status="ok", output={"exit_code": 0}),
        TurnFinished(outcome="completed"),
    ])  # fmt: skip
    updates = one_card(events)
    assert [u["status"] for u in updates] == ["in_progress"] * 4 + ["completed"] * 3
    # A detached session keeps its own card: the call that started it finished at once.
    detached = stamp([
        BashSessionStarted(session_id="bs-2", command="sleep 99", workdir=".", pid=11, pgid=11, monitor_pid=9),
        ToolCallFinished(call_id="tc-8", namespace="bash_exec", tool="bash_exec", status="ok", arguments={"command": "sleep 99"}),
        BashProgress(session_id="bs-2", line=1, data={"step": 1}),
    ])  # fmt: skip
    assert set(cards(detached)) == {"bash:bs-2", "tc-8"}


def test_a_turns_end_forgets_its_unpaired_halves() -> None:
    notifier = Notifier("s")
    for event in stamp([RUNNER_CALL, TurnFinished(outcome="failed")]):
        notifier.notification(event)
    assert notifier.cards.waiting == {} and notifier.cards.cards == {} and notifier.cards.status == {}
