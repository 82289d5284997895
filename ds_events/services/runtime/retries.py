"""Honest retries: how a failed turn ended, and what happens next.

:func:`classify` reads the turn's own events in the log and the runner's error text and
names the failure (:class:`~ds_events.events.runner.TurnFailure`); :func:`decide` turns it
into the event that follows ``runner.turn_finished``: a retry, or a hold for the user.

=====================================  ==============  ==========================================
cause (how the turn ended)             class           what happens
=====================================  ==============  ==========================================
agent_crashed (killed by a signal)     transient       retried after the backoff
provider_unreachable (network)         transient       retried after the backoff
provider_5xx (the provider failed)     transient       retried after the backoff
stalled (silent past stall_seconds)    transient       retried after the backoff
rate_limit (429, "rate limit")         transient       retried after the wait it names, else backoff
usage_limit, reset time printed        transient       retried at the reset, attempts not capped
usage_limit, no reset time             transient       retried after the backoff
agent_failed (any other exit)          transient       retried after the backoff
refused_call (exited after one of      deterministic   held: health failed, waits for the user
our calls was refused)
repeated_failure (the same             deterministic   held: health failed, waits for the user
agent_failed error twice in a row)
any transient, attempts spent          (its own)       held: health failed, waits for the user
=====================================  ==============  ==========================================

A held turn runs again when the user sends a message or resumes the quest
(``ds control Q resume``): a retry of it with a fresh attempt budget.
"""

from __future__ import annotations

import re
import time
from typing import Any

from ds_events.events import Event
from ds_events.events.runner import RunnerToolCall, RunnerToolResult, TurnFailure, TurnHeld, TurnOutcome, TurnRetryScheduled
from ds_events.events.tool import ToolCallFinished
from ds_events.home import Quest
from ds_events.services.runtime.limits import reset_at
from ds_events.services.runtime.skills import TOOL_NAMESPACES
from projections import turns as view

__all__ = ["classify", "decide", "run_events", "CRASH_EXIT_CODES"]

# Exit codes a shell wrapper reports for a child killed by SIGABRT, SIGKILL, SIGSEGV, SIGTERM.
CRASH_EXIT_CODES = frozenset({134, 137, 139, 143})

_USAGE = re.compile(r"usage limit|hit your (?:usage )?limit|(?<!rate )limit reached|quota (?:exceeded|exhausted)|insufficient_quota", re.I)
_RATE = re.compile(r"\b429\b|rate[ _-]?limit|too many requests|overloaded_error", re.I)
_5XX = re.compile(r"(?:status|http|error|code)[ :=]*5\d\d\b|\b5\d\d (?:internal|bad gateway|service unavailable|gateway)|"
                  r"internal server error|bad gateway|service unavailable|gateway timeout|server_error|\boverloaded\b", re.I)  # fmt: skip
_NETWORK = re.compile(r"connection (?:refused|reset|error|closed)|could not resolve|name resolution|ENOTFOUND|ECONNREFUSED|"
                      r"ECONNRESET|ETIMEDOUT|network (?:error|is unreachable)|unreachable|timed out|stream disconnected|"
                      r"API (?:is )?down|failed to connect|error sending request", re.I)  # fmt: skip


def classify(
    quest: Quest, record: view.TurnRecord, *, outcome: TurnOutcome, reason: str, exit_code: int | None
) -> TurnFailure | None:
    """How the turn ``record`` (ending as ``outcome`` for ``reason``) failed; None when
    it did not (completed, interrupted by a pause or a dead host, cancelled by a stop)."""
    if outcome == "stalled":
        return TurnFailure(failure_class="transient", cause="stalled", error=reason or None)
    if outcome != "failed":
        return None
    if exit_code is not None and (exit_code < 0 or exit_code in CRASH_EXIT_CODES):
        return TurnFailure(failure_class="transient", cause="agent_crashed", error=reason or None)
    # A limit is unmistakable; then a refused call of ours the agent gave up on (its
    # error text may quote the refusal, which must not read as a provider's failure);
    # then the provider's own failures.
    limit = _limit_cause(reason)
    if limit is not None:
        return TurnFailure(failure_class="transient", cause=limit, error=reason[:500] or None)
    refused = _refused_call(run_events(quest, record))
    if refused is not None and exit_code is not None:
        return refused
    provider = _provider_cause(reason)
    if provider is not None:
        return TurnFailure(failure_class="transient", cause=provider, error=reason[:500] or None)
    failure = TurnFailure(failure_class="transient", cause="agent_failed", error=reason[:500] or None)
    before = quest.state("turns").turns.get(record.retry_of or "")
    if before is not None and before.failure is not None and _same(before.failure, failure):
        return TurnFailure(failure_class="deterministic", cause="repeated_failure", error=failure.error)
    return failure


def decide(
    record: view.TurnRecord,
    failure: TurnFailure,
    *,
    reason: str,
    max_attempts: int,
    backoff_seconds: float,
    backoff_max_seconds: float,
    now: float | None = None,
    actor: str = "",
) -> Event:
    """What follows the failed turn ``record``: a :class:`TurnRetryScheduled` (transient,
    attempts left, or a usage limit whose reset is known) or a :class:`TurnHeld`."""
    now = time.time() if now is None else now
    why = f"{failure.cause}: {reason}"[:500]
    backoff = min(backoff_max_seconds, backoff_seconds * 2 ** (record.attempt - 1))
    if failure.failure_class == "transient":
        named = reset_at(failure.error or reason, now) if failure.cause in ("usage_limit", "rate_limit") else None
        if failure.cause == "usage_limit" and named is not None:
            # Waiting for a quota is not a failed attempt: it is retried at the reset
            # (never sooner than the backoff), however many attempts it took.
            delay = max(named - now, backoff_seconds)
            return TurnRetryScheduled(run_id=record.run_id, attempt=record.attempt + 1, delay_s=round(delay, 3),
                                      reason=why, failure=failure, max_attempts=max_attempts, actor=actor)  # fmt: skip
        if record.attempt < max_attempts:
            delay = max(backoff, named - now) if named is not None else backoff
            return TurnRetryScheduled(run_id=record.run_id, attempt=record.attempt + 1, delay_s=round(delay, 3),
                                      reason=why, failure=failure, max_attempts=max_attempts, actor=actor)  # fmt: skip
        why = f"attempts spent ({record.attempt} of {max_attempts}): {why}"[:500]
    return TurnHeld(
        run_id=record.run_id, attempt=record.attempt, max_attempts=max_attempts, reason=why, failure=failure, actor=actor
    )


def run_events(quest: Quest, record: view.TurnRecord) -> list[Event]:
    """The turn's own events (every event carrying its run id), in log order."""
    return [e for e in quest.log.read(max(record.started_seq - 1, 0)) if e.run_id == record.run_id]


# -- helpers ----------------------------------------------------------------------------


def _limit_cause(text: str) -> str | None:
    if _USAGE.search(text):
        return "usage_limit"
    if _RATE.search(text):
        return "rate_limit"
    return None


def _provider_cause(text: str) -> str | None:
    if _5XX.search(text):
        return "provider_5xx"
    if _NETWORK.search(text):
        return "provider_unreachable"
    return None


def _refused_call(events: list[Event]) -> TurnFailure | None:
    """The turn's last call of one of our tools, when it was refused (and no call of
    ours succeeded after it): our server's record first (it has the error code), else
    the agent's view of the call."""
    calls: dict[str, RunnerToolCall] = {}
    last: TurnFailure | None = None
    for event in events:
        match event:
            case RunnerToolCall():
                calls[event.call_id] = event
            case RunnerToolResult():
                call = calls.get(event.call_id)
                if call is None or not _ours(call):
                    continue
                if event.status == "ok":
                    last = None
                    continue
                # The agent's view names its call; our server's record (just before) the code.
                code = _error_code(event.output) or (last.error if last is not None else None)
                last = TurnFailure(failure_class="deterministic", cause="refused_call", tool=call.tool,
                                   call_id=event.call_id, error=code)  # fmt: skip
            case ToolCallFinished():
                if event.status == "ok":
                    last = None
                    continue
                last = TurnFailure(failure_class="deterministic", cause="refused_call", tool=f"{event.namespace}.{event.tool}",
                                   call_id=event.call_id, error=event.error_code or event.error_message[:200] or None)  # fmt: skip
    return last


def _ours(call: RunnerToolCall) -> bool:
    namespace = call.server or call.tool.partition(".")[0]
    return namespace in TOOL_NAMESPACES or any(f"_{n}_" in call.tool or call.tool.startswith(f"{n}.") for n in TOOL_NAMESPACES)


def _error_code(output: Any) -> str | None:
    if isinstance(output, dict):
        code = output.get("error") or output.get("code")
        if isinstance(code, str):
            return code
    return None


def _same(a: TurnFailure, b: TurnFailure) -> bool:
    return a.cause == b.cause and (a.error or "") == (b.error or "")
