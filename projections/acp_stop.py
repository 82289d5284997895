"""How an ACP prompt ends: the stop reason the schema offers for the outcome of the turns
it ran, and the line the agent says last (pure, no I/O, no clock).

``ds acp`` ends a prompt when its quest has nothing more to run; :func:`prompt_end`
then reads the ``turns`` view: the last turn that started after the prompt's message,
and a retry still scheduled. A transient failure with a retry scheduled does not end the
prompt (:func:`waits_for_retry`): the prompt waits for the retry's turn, as many as the
quest's retry plan allows (``runner.max_attempts``), and ends with the last one's outcome.

=========================================================  ===================  =========
the prompt's last turn                                     stop reason          says why
=========================================================  ===================  =========
completed (or no turn ran: no runner took the message)     ``end_turn``         no
failed or stalled, a retry scheduled                       (waits for it)       —
failed or stalled at a token or usage limit (the model's   ``max_tokens``       yes
context or output limit, a plan's usage limit), no retry
left, or a retry scheduled for a usage limit (its reset
may be hours away: the prompt does not block on it)
failed at the agent's own turn limit (``error_max_turns``)  ``max_turn_requests`` yes
failed or stalled, no retry left (attempts spent, a        ``refusal``          yes
deterministic failure held for the user, a quest no
longer active)
interrupted by a pause, cancelled by a stop                ``cancelled``        yes, unless
                                                                                this client
                                                                                cancelled
interrupted otherwise (its host died: the next turn        ``refusal``          yes
continues it)
=========================================================  ===================  =========

The cause of a failure is the turn's classified ``failure.cause`` when the log records
one (``runner.turn_retry_scheduled`` / ``runner.turn_held``: ``usage_limit`` is a usage
limit), and the reason's text for what no cause names (the model's context limit, the
agent's turn limit; a log older than the classification: a usage limit too)
(:func:`limit_of`). A turn held for the user (``runner.turn_held``: a deterministic
failure, or attempts spent) ends the prompt in ``refusal`` at once; the closing line
then ends with the quest's health summary (:func:`projections.health.derive`), which
says what the user can do.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from .turns import State as TurnsState, TurnRecord

__all__ = ["StopReason", "STOP_REASONS", "PromptEnd", "prompt_end", "waits_for_retry", "limit_of"]

# The stop reasons of the ACP schema (acp.schema.StopReason), every one of them.
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
STOP_REASONS: tuple[str, ...] = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")

_CONTEXT_LIMIT = re.compile(r"max[ _]tokens|context[ _]length|context[ _]window|maximum context|token limit", re.IGNORECASE)
_USAGE_LIMIT = re.compile(r"usage[ _]limit|quota", re.IGNORECASE)
_TURN_LIMIT = re.compile(r"max[ _]turns", re.IGNORECASE)


class PromptEnd(msgspec.Struct, frozen=True, kw_only=True):
    """The prompt's stop reason, and what the agent says before it ("" for nothing);
    ``run_id`` / ``outcome``: the turn it is about (None when no turn ran)."""

    stop_reason: StopReason
    message: str = ""
    run_id: str | None = None
    outcome: str | None = None


def prompt_end(
    turns: TurnsState, *, since_seq: int, cancelled: bool = False, quest_id: str = "", health: str = ""
) -> PromptEnd:
    """How a prompt whose message is at ``since_seq`` ends, its quest having nothing more
    to run. ``cancelled``: this client asked (``session/cancel``); ``health``: the quest's
    health summary now, said after a failure (else a plain "waiting for your message")."""
    last = _last_turn(turns, since_seq)
    if cancelled:
        return PromptEnd(stop_reason="cancelled", run_id=last.run_id if last else None,
                         outcome=last.outcome if last else None)  # fmt: skip
    if last is None or last.outcome in (None, "completed"):
        return PromptEnd(stop_reason="end_turn", run_id=last.run_id if last else None,
                         outcome=last.outcome if last else None)  # fmt: skip
    where = f" (turn {last.run_id}, attempt {last.attempt})"
    retry = turns.retry if turns.retry is not None and turns.retry.run_id == last.run_id else None
    if last.outcome == "cancelled" or (last.outcome == "interrupted" and last.reason in ("paused", "stopped")):
        word = "paused" if last.reason == "paused" else "stopped"
        resume = f" `ds control {quest_id} resume` continues it." if quest_id and word == "paused" else ""
        return _end("cancelled", f"The turn was {word}{where}.{resume}", last)
    if last.outcome == "interrupted":
        return _end("refusal", f"The turn was interrupted: {last.reason or 'no reason recorded'}{where}; "
                               "the next turn continues it.", last)  # fmt: skip
    limit = limit_of(last.reason, _cause(turns, last))
    if retry is not None and limit == "max_tokens":  # the one retry a prompt does not wait for
        return _end("max_tokens", f"The turn stopped at a usage limit: {last.reason}{where}. The quest retries "
                                  f"by itself as attempt {retry.attempt} in {retry.delay_s:g} s.", last)  # fmt: skip
    waiting = "the quest is waiting for your next message"
    if health:
        waiting = "quest health: " + health.replace("QUEST", quest_id or "QUEST")
    if limit == "max_turn_requests":
        return _end("max_turn_requests", f"The turn hit the agent's turn limit: {last.reason}{where}; {waiting}.", last)
    if limit == "max_tokens":
        return _end("max_tokens", f"The turn stopped at a token or usage limit: {last.reason}{where}; {waiting}.", last)
    what = "stalled" if last.outcome == "stalled" else "failed"
    held = turns.held is not None and turns.held.run_id == last.run_id
    left = (
        "it is held for you, not retried" if held
        else f"attempt {retry.attempt} is scheduled but not run here" if retry is not None
        else "no retry is left"
    )  # fmt: skip
    return _end("refusal", f"The turn {what}: {last.reason or 'no reason recorded'}{where}; {left}, "
                           f"{waiting}.", last)  # fmt: skip


def waits_for_retry(turns: TurnsState) -> bool:
    """Whether a scheduled retry keeps the prompt waiting: every one but a usage limit's
    (the provider's reset can be hours away; the quest resumes by itself)."""
    retry = turns.retry
    if retry is None:
        return False
    failed = turns.turns.get(retry.run_id)
    cause = retry.failure.cause if retry.failure is not None else None
    return limit_of(failed.reason if failed else retry.reason, cause) != "max_tokens"


def limit_of(reason: str, cause: str | None = None) -> StopReason | None:
    """The limit a failed turn ran into: ``max_tokens`` for a usage limit (the classified
    ``cause`` says ``usage_limit``; with no cause, the reason's words) or the model's
    context or output limit (the reason's words), ``max_turn_requests`` for the agent's
    own turn limit (``error_max_turns``), else None."""
    if cause == "usage_limit":
        return "max_tokens"
    if _TURN_LIMIT.search(reason):
        return "max_turn_requests"
    if _CONTEXT_LIMIT.search(reason) or (cause is None and _USAGE_LIMIT.search(reason)):
        return "max_tokens"
    return None


# -- private helpers -------------------------------------------------------------------


def _last_turn(turns: TurnsState, since_seq: int) -> TurnRecord | None:
    """The newest turn that started after ``since_seq``."""
    for run_id in reversed(turns.order):
        record = turns.turns[run_id]
        if record.started_seq <= since_seq:
            return None
        return record
    return None


def _cause(turns: TurnsState, last: TurnRecord) -> str | None:
    """The classified cause of the turn's failure, when the log records one (its retry,
    its hold, or the turn's own record of either)."""
    for failure in (
        turns.retry.failure if turns.retry is not None and turns.retry.run_id == last.run_id else None,
        turns.held.failure if turns.held is not None and turns.held.run_id == last.run_id else None,
        last.failure,
    ):
        if failure is not None:
            return failure.cause
    return None


def _end(reason: StopReason, message: str, last: TurnRecord) -> PromptEnd:
    return PromptEnd(stop_reason=reason, message=message, run_id=last.run_id, outcome=last.outcome)
