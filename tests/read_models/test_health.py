"""Quest health (:func:`projections.health.derive`) for every state, from events appended
to a real quest log and folded by the real views: what ``ds quest list``, the HTTP quest
routes, the page and SUMMARY.md show."""

from __future__ import annotations

import math

import msgspec

from ds_events.events import QuestCompleted, QuestControl
from ds_events.events.base import ts_seconds
from ds_events.events.runner import (
    AgentMessage,
    RunnerToolCall,
    TurnFailure,
    TurnFinished,
    TurnHeld,
    TurnRetryScheduled,
    TurnStarted,
)
from ds_events.home import Home, Quest
from ds_events.services import interactions as interactions_service, quest as quest_service
from projections import health
from projections.health import HEALTH_STATES, Health


def derive(quest: Quest, *, now: float | None = None, stall: float = 600.0, budget: int = 3) -> Health:
    last = quest.log.last_seq
    when = now if now is not None else ts_seconds(quest.log.read(last - 1)[0].ts)
    return health.derive(
        quest.state("status"), quest.state("turns"), quest.state("interactions"), now=when, stall_seconds=stall,
        max_attempts=budget,
    )  # fmt: skip


def start(quest: Quest, run_id: str, *, attempt: int = 1, retry_of: str | None = None) -> TurnStarted:
    return quest.emit(
        TurnStarted(run_id=run_id, runner="scripted", skill="scout", attempt=attempt, retry_of=retry_of, actor="scheduler")
    )


def finish(quest: Quest, run_id: str, outcome: str = "completed", reason: str = "") -> TurnFinished:
    return quest.emit(TurnFinished(run_id=run_id, outcome=outcome, reason=reason, actor="scheduler"))  # type: ignore[arg-type]


REFUSED = TurnFailure(failure_class="deterministic", cause="refused_call", tool="artifact.record", call_id="c1", error="invalid_metrics")


def test_a_quest_without_turns_is_new(home: Home) -> None:
    with home.create_quest("Fresh", quest_id="fresh") as q:
        h = derive(q)
        assert h.state == "new" and h.failure is None and h.next_attempt_at is None
        quest_service.post_message(q, quest_service.PostMessage(text="hello"))
        h = derive(q)
        assert h.state == "new" and "1 message(s) queued" in h.summary


def test_a_running_turn_is_running_and_then_idle(quest: Quest) -> None:
    started = start(quest, "run-1")
    quest.emit(AgentMessage(run_id="run-1", text="working", actor="runner:scripted"))
    h = derive(quest)
    assert (h.state, h.run_id, h.since_seq, h.attempt) == ("running", "run-1", started.seq, 1)
    done = finish(quest, "run-1")
    h = derive(quest)
    assert (h.state, h.since, h.since_seq, h.run_id) == ("idle", done.ts, done.seq, "run-1")
    assert h.summary == "idle: waiting for a message"


def test_a_running_turn_silent_past_the_stall_limit_is_stalled(quest: Quest) -> None:
    start(quest, "run-1")
    talk = quest.emit(RunnerToolCall(run_id="run-1", call_id="c1", tool="memory.search", actor="runner:scripted"))
    quest.emit(QuestControl(action="resume"))  # another actor's event is not the turn's activity
    t = ts_seconds(talk.ts)
    assert derive(quest, now=t + 59, stall=60).state == "running"
    h = derive(quest, now=t + 61, stall=60)
    assert (h.state, h.since_seq, h.run_id) == ("stalled", talk.seq, "run-1")
    assert "silent for 61 s" in h.summary
    # Without a clock (what replay writes) a running turn shows as running.
    assert health.replay_health(quest.state("status"), quest.state("turns"), quest.state("interactions")).state == "running"


def test_an_open_blocking_request_waits_for_the_user(quest: Quest) -> None:
    start(quest, "run-1")
    sent = interactions_service.interact(
        quest, interactions_service.Interact(
            message="Which baseline?", kind="decision_request", options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]
        ),
    )
    h = derive(quest)
    assert h.state == "waiting_for_user" and sent.interaction_id in h.summary and "Which baseline?" in h.summary
    finish(quest, "run-1")
    assert derive(quest).state == "waiting_for_user"  # still, once the turn ended
    assert sent.interaction_id is not None
    interactions_service.reply(quest, interactions_service.Reply(interaction_id=sent.interaction_id, text="the first"))
    assert derive(quest).state == "idle"


def test_pause_stop_and_completion_win(quest: Quest) -> None:
    start(quest, "run-1")
    paused = quest.emit(QuestControl(action="pause", reason="lunch"))
    h = derive(quest)
    assert (h.state, h.since_seq, h.reason) == ("paused", paused.seq, "lunch")
    assert "ds control QUEST resume" in h.summary
    finish(quest, "run-1", "interrupted", "paused")
    stopped = quest.emit(QuestControl(action="stop"))
    assert (derive(quest).state, derive(quest).since_seq) == ("stopped", stopped.seq)
    quest.emit(QuestControl(action="resume"))
    assert derive(quest).state == "idle"  # the cut-off turn waits for a host to continue it
    assert "cut off" in derive(quest).summary
    done = quest.emit(QuestCompleted(summary="beat the baseline"))
    h = derive(quest)
    assert (h.state, h.since_seq, h.summary) == ("completed", done.seq, "completed: beat the baseline")


def test_a_scheduled_retry_is_retrying_with_its_time_and_attempt(quest: Quest) -> None:
    start(quest, "run-1")
    finish(quest, "run-1", "failed", "exit 1: 503 Service Unavailable")
    failure = TurnFailure(failure_class="transient", cause="provider_5xx", error="503 Service Unavailable")
    plan = quest.emit(TurnRetryScheduled(run_id="run-1", attempt=2, delay_s=90, reason="failed", failure=failure, max_attempts=4))
    h = derive(quest)
    assert (h.state, h.attempt, h.max_attempts, h.run_id, h.since_seq) == ("retrying", 2, 4, "run-1", plan.seq)
    due = ts_seconds(plan.ts) + 90
    assert h.next_attempt_at is not None and abs(ts_seconds(h.next_attempt_at) - due) < 1
    assert h.failure == failure and h.summary.startswith(f"retrying: attempt 2 of 4 at {h.next_attempt_at}")
    # The retry runs: running, attempt 2 of the recorded budget.
    start(quest, "run-2", attempt=2, retry_of="run-1")
    h = derive(quest)
    assert (h.state, h.attempt, h.max_attempts) == ("running", 2, 4) and "attempt 2 of 4" in h.summary


def test_a_held_turn_is_failed_with_its_reason_and_failing_call(quest: Quest) -> None:
    start(quest, "run-1")
    finish(quest, "run-1", "failed", "exit 1")
    held = quest.emit(TurnHeld(run_id="run-1", attempt=1, max_attempts=3, reason="artifact.record refused", failure=REFUSED))
    h = derive(quest)
    assert (h.state, h.since_seq, h.run_id, h.attempt, h.max_attempts) == ("failed", held.seq, "run-1", 1, 3)
    assert h.summary.startswith("failed: attempt 1 of 3 — artifact.record refused (invalid_metrics)")
    as_json = msgspec.to_builtins(h)
    assert as_json["failure"] == {
        "class": "deterministic", "cause": "refused_call", "tool": "artifact.record", "call_id": "c1",
        "error": "invalid_metrics",
    }  # fmt: skip
    # The user's go-ahead: a retry due now, with a fresh budget; then it runs.
    quest.emit(QuestControl(action="resume"))
    h = derive(quest)
    assert h.state == "retrying" and h.attempt == 1 and "resumed by the user" in h.summary
    start(quest, "run-2", retry_of="run-1")
    assert derive(quest).state == "running"


def test_a_log_from_before_holds_with_its_attempts_spent_is_failed(quest: Quest) -> None:
    start(quest, "run-1")
    finish(quest, "run-1", "failed", "exit 1: boom")
    quest.emit(TurnRetryScheduled(run_id="run-1", attempt=2, delay_s=0))
    start(quest, "run-2", attempt=2, retry_of="run-1")
    finish(quest, "run-2", "stalled", "no output for 60 s")
    h = derive(quest, budget=2)
    assert (h.state, h.attempt, h.max_attempts, h.run_id) == ("failed", 2, 2, "run-2")
    assert h.failure is not None and h.failure.cause == "stalled"


def test_every_state_has_a_json_form_with_the_contract_keys(quest: Quest) -> None:
    keys = {"state", "summary", "since", "since_seq", "run_id", "attempt", "max_attempts", "next_attempt_at", "reason", "failure"}
    h = msgspec.to_builtins(derive(quest, now=math.inf))
    assert set(h) == keys and h["state"] in HEALTH_STATES


def test_summary_md_says_the_health_and_replay_writes_it_back_byte_for_byte(home: Home, quest: Quest) -> None:
    summary = quest.root / "SUMMARY.md"
    assert "- health: new: no turn yet\n" in summary.read_text()
    start(quest, "run-1")
    assert "- health: running: turn 1 (scout)\n" in summary.read_text()  # live, as each turn event lands
    finish(quest, "run-1", "failed", "exit 1")
    quest.emit(TurnHeld(run_id="run-1", attempt=1, max_attempts=3, reason="artifact.record refused", failure=REFUSED))
    live = summary.read_bytes()
    assert b"- health: failed: attempt 1 of 3 \xe2\x80\x94 artifact.record refused (invalid_metrics)" in live
    quest.close()
    summary.unlink()
    from ds_events.replay import replay_quest

    replay_quest(quest.root, quest_id=quest.id)
    assert summary.read_bytes() == live


def test_summary_md_shows_a_silent_running_turn_as_running_since_replay_has_no_clock(quest: Quest) -> None:
    start(quest, "run-1")
    talk = quest.emit(AgentMessage(run_id="run-1", text="working", actor="runner:scripted"))
    assert derive(quest, now=ts_seconds(talk.ts) + 3600, stall=60).state == "stalled"  # what the routes say
    assert "- health: running: turn 1 (scout)\n" in (quest.root / "SUMMARY.md").read_text()
