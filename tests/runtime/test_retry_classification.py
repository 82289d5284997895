"""The retry classification table (:mod:`ds_events.services.runtime.retries`), one test per
row: a turn recorded in a real quest log ends through the real ``finish_turn``, and the
event that follows its ``runner.turn_finished`` (a retry, or a hold for the user) is
what the row says, with the cause the health shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ds_events.events.runner import RunnerToolCall, RunnerToolResult, TurnHeld, TurnRetryScheduled, TurnStarted
from ds_events.events.tool import ToolCallFinished
from ds_events.home import Quest
from ds_events.services.quest import quest_health
from ds_events.services.runtime import retries, turns
from ds_events.services.runtime.limits import reset_at

BACKOFF = 5.0


def started(quest: Quest, run_id: str, *, attempt: int = 1, retry_of: str | None = None) -> None:
    quest.emit(TurnStarted(run_id=run_id, runner="scripted", skill="scout", attempt=attempt, retry_of=retry_of, actor="scheduler"))


def end(quest: Quest, run_id: str, reason: str, *, exit_code: int | None = 1, outcome: str = "failed", budget: int = 3) -> object:
    """Finish the turn as the scheduler does and return the event that followed it."""
    turns.finish_turn(
        quest, run_id, outcome=outcome, reason=reason, exit_code=exit_code, max_attempts=budget,  # type: ignore[arg-type]
        backoff_seconds=BACKOFF, backoff_max_seconds=120.0, actor="scheduler",
    )  # fmt: skip
    last = quest.log.read(quest.log.last_seq - 1)[0]
    assert last.run_id == run_id
    return last


@pytest.mark.parametrize(
    ("reason", "exit_code", "outcome", "cause"),
    [
        ("exit -9: ", -9, "failed", "agent_crashed"),
        ("exit 137: Killed", 137, "failed", "agent_crashed"),
        ("exit 1: stream error: error sending request for url (https://api.openai.com/v1/responses): connection refused", 1,
         "failed", "provider_unreachable"),
        ("exit 1: unexpected status 503 Service Unavailable", 1, "failed", "provider_5xx"),
        ("exit 1: API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}", 1, "failed", "provider_5xx"),
        ("no output for 900 s", None, "stalled", "stalled"),
        ("exit 1: the agent wrote nothing useful", 1, "failed", "agent_failed"),
    ],
)  # fmt: skip
def test_a_transient_failure_is_retried_after_the_backoff(quest: Quest, reason: str, exit_code: int | None, outcome: str, cause: str) -> None:
    started(quest, "run-1")
    then = end(quest, "run-1", reason, exit_code=exit_code, outcome=outcome)
    assert isinstance(then, TurnRetryScheduled)
    assert then.failure is not None and (then.failure.failure_class, then.failure.cause) == ("transient", cause)
    assert (then.attempt, then.delay_s, then.max_attempts) == (2, BACKOFF, 3)
    assert quest_health(quest).state == "retrying"


def test_a_rate_limit_waits_as_long_as_it_says_else_the_backoff(quest: Quest) -> None:
    started(quest, "run-1")
    then = end(quest, "run-1", "exit 1: Rate limit reached for gpt-5 on tokens per min. Please try again in 40s.")
    assert isinstance(then, TurnRetryScheduled) and then.failure is not None and then.failure.cause == "rate_limit"
    assert then.delay_s == pytest.approx(40.0, abs=0.5)
    started(quest, "run-2", attempt=2, retry_of="run-1")
    then = end(quest, "run-2", "exit 1: 429 Too Many Requests")
    assert isinstance(then, TurnRetryScheduled) and then.delay_s == BACKOFF * 2  # nothing said: the backoff, doubled


def test_a_usage_limit_with_a_reset_time_is_retried_at_the_reset_even_past_the_budget(quest: Quest) -> None:
    started(quest, "run-1", attempt=3, retry_of=None)
    text = "exit 1: You've hit your usage limit. Upgrade to Pro or try again in 2 hours 13 minutes."
    then = end(quest, "run-1", text, budget=3)  # attempt 3 of 3: a failure would be held
    assert isinstance(then, TurnRetryScheduled) and then.failure is not None
    assert (then.failure.cause, then.attempt) == ("usage_limit", 4)
    assert then.delay_s == pytest.approx(2 * 3600 + 13 * 60, abs=2)
    health = quest_health(quest)
    assert health.state == "retrying" and health.next_attempt_at is not None


def test_a_usage_limit_without_a_reset_time_backs_off(quest: Quest) -> None:
    started(quest, "run-1")
    then = end(quest, "run-1", "exit 1: Claude usage limit reached.")
    assert isinstance(then, TurnRetryScheduled) and then.failure is not None
    assert (then.failure.cause, then.delay_s, then.attempt) == ("usage_limit", BACKOFF, 2)


def test_an_agent_that_exits_after_our_call_was_refused_is_held_not_retried(quest: Quest) -> None:
    started(quest, "run-1")
    quest.emit(RunnerToolCall(run_id="run-1", call_id="call-1", tool="memory.search", server="memory", actor="runner:scripted"))
    quest.emit(RunnerToolResult(run_id="run-1", call_id="call-1", status="ok", output={"items": []}, actor="runner:scripted"))
    quest.emit(RunnerToolCall(run_id="run-1", call_id="call-2", tool="artifact.record", server="artifact", actor="runner:scripted"))
    quest.emit(ToolCallFinished(run_id="run-1", call_id="srv-7", namespace="artifact", tool="record", status="error",
                                error_code="invalid_metrics", error_message="metrics must be numbers", actor="mcp:artifact"))  # fmt: skip
    quest.emit(RunnerToolResult(run_id="run-1", call_id="call-2", status="error", output={"message": "refused"}, actor="runner:scripted"))
    then = end(quest, "run-1", "exit 1: step 2: artifact.record was expected to end ok")
    assert isinstance(then, TurnHeld)
    f = then.failure
    assert (f.failure_class, f.cause, f.tool, f.call_id, f.error) == ("deterministic", "refused_call", "artifact.record", "call-2", "invalid_metrics")
    health = quest_health(quest)
    assert health.state == "failed" and health.summary.startswith("failed: attempt 1 of 3 — artifact.record refused (invalid_metrics)")
    # Nothing runs again by itself: the scheduler has nothing to do until the user acts.
    assert turns.next_action("active", quest.state("turns"), quest.state("interactions")).kind == "idle"


def test_a_refused_call_the_agent_got_past_is_not_the_failure(quest: Quest) -> None:
    started(quest, "run-1")
    quest.emit(ToolCallFinished(run_id="run-1", call_id="srv-1", namespace="artifact", tool="record", status="error",
                                error_code="invalid_metrics", actor="mcp:artifact"))  # fmt: skip
    quest.emit(ToolCallFinished(run_id="run-1", call_id="srv-2", namespace="artifact", tool="record", status="ok", actor="mcp:artifact"))
    then = end(quest, "run-1", "exit 1: something else")
    assert isinstance(then, TurnRetryScheduled) and then.failure is not None and then.failure.cause == "agent_failed"


def test_the_same_failure_twice_is_held(quest: Quest) -> None:
    started(quest, "run-1")
    first = end(quest, "run-1", "exit 2: config.yaml: no such file")
    assert isinstance(first, TurnRetryScheduled)
    started(quest, "run-2", attempt=2, retry_of="run-1")
    second = end(quest, "run-2", "exit 2: config.yaml: no such file")
    assert isinstance(second, TurnHeld)
    assert (second.failure.failure_class, second.failure.cause) == ("deterministic", "repeated_failure")
    assert quest_health(quest).state == "failed"


def test_transient_failures_with_their_attempts_spent_are_held(quest: Quest) -> None:
    started(quest, "run-1", attempt=3)
    then = end(quest, "run-1", "exit 1: unexpected status 502 Bad Gateway", budget=3)
    assert isinstance(then, TurnHeld)
    assert (then.failure.failure_class, then.failure.cause, then.attempt, then.max_attempts) == ("transient", "provider_5xx", 3, 3)
    assert then.reason.startswith("attempts spent (3 of 3)")
    assert quest_health(quest).summary.startswith("failed: attempt 3 of 3 — provider_5xx")


def test_a_paused_or_cut_off_turn_is_no_failure(quest: Quest) -> None:
    started(quest, "run-1")
    then = end(quest, "run-1", "paused", exit_code=None, outcome="interrupted")
    assert then.type == "runner.turn_finished"  # nothing follows it: the next host continues the turn


# -- the reset-time parser, on what the CLIs print -----------------------------------------

NOW = datetime(2026, 12, 2, 4, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("Claude AI usage limit reached|1796191200", 2 * 3600),
        ("You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 4 days 23 hours "
         "59 minutes.", (4 * 24 + 23) * 3600 + 59 * 60),
        ("You've hit your usage limit. Try again in 2h 13m.", 2 * 3600 + 13 * 60),
        ("Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM): Limit 30000, Used 29500. Please try "
         "again in 1.5s.", 1.5),
        ("usage limit exceeded; resets at 2026-12-02T09:30:00Z", 5.5 * 3600),
        ("HTTP 429 Too Many Requests, retry-after: 30", 30),
        ("Your limit will reset at 3pm (Europe/Berlin).", 10 * 3600),  # 15:00 CET is 14:00 UTC
        ("5-hour limit reached ∙ resets 5am (America/New_York)", 6 * 3600),  # 05:00 EST is 10:00 UTC
        ("5-hour limit reached ∙ resets 3am (UTC)", 23 * 3600),  # past today: tomorrow's
    ],
)  # fmt: skip
def test_the_reset_time_the_clis_print_is_read(text: str, seconds: float) -> None:
    assert reset_at(text, NOW) == pytest.approx(NOW + seconds, abs=0.01)


def test_a_clock_time_without_a_zone_is_this_machines_local_time() -> None:
    local = datetime.fromtimestamp(NOW).astimezone()
    due = local.replace(hour=15, minute=45, second=0, microsecond=0)
    due = due if due > local else due + timedelta(days=1)
    assert reset_at("You've hit your usage limit, try again at 3:45 PM.", NOW) == pytest.approx(due.timestamp())


@pytest.mark.parametrize(
    "text",
    ["exit 1: model API down", "usage limit reached", "Claude AI usage limit reached|1600000000", "resets 3",
     "try again in 400 days", ""],
)  # fmt: skip
def test_text_without_a_believable_reset_gives_none(text: str) -> None:
    assert reset_at(text, NOW) is None


def test_the_table_in_the_module_names_every_cause_the_tests_cover() -> None:
    doc = retries.__doc__ or ""
    for cause in ("agent_crashed", "provider_unreachable", "provider_5xx", "stalled", "rate_limit", "usage_limit",
                  "agent_failed", "refused_call", "repeated_failure"):  # fmt: skip
        assert cause in doc
