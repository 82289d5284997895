"""What the earlier attempts of a turn did, read back from the log: so a retry never
repeats finished work.

:func:`attempt_chain` follows a retry's ``retry_of`` back to the turn's first attempt and
collects, per attempt, its tool calls and their results (the agent's view,
``runner.tool_call``/``runner.tool_result``, and our servers' records,
``tool.call_finished``), its messages and the shell sessions it started (with their
status now). The retry's prompt carries it (:func:`retry_note`) and the scripted agent
resumes after the last step it shows done.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.events.bash import BashSessionStarted
from ds_events.events.runner import AgentMessage, RunnerToolCall, RunnerToolResult
from ds_events.events.tool import ToolCallFinished
from ds_events.home import Quest
from ds_events.services.runtime import retries
from projections import turns as view

__all__ = ["Attempt", "AttemptCall", "AttemptSession", "attempt_chain", "retry_note"]

MAX_NOTE_LINES = 40  # what a retry's note lists at most (newest calls kept)


class AttemptCall(msgspec.Struct, kw_only=True):
    call_id: str
    tool: str
    status: str  # ok | error | unfinished (no result recorded)
    arguments: Any = None
    output: Any = None
    error: str = ""  # our server's error code, when it refused


class AttemptSession(msgspec.Struct, kw_only=True):
    session_id: str
    command: str
    status: str  # the session's status now (running, exited, ...)
    exit_code: int | None = None
    idempotency_key: str | None = None


class Attempt(msgspec.Struct, kw_only=True):
    run_id: str
    attempt: int
    outcome: str | None
    reason: str = ""
    calls: list[AttemptCall] = []
    messages: dict[str, str] = {}  # message id (or "") -> text
    sessions: list[AttemptSession] = []


def attempt_chain(quest: Quest, run_id: str) -> list[Attempt]:
    """The attempts of the turn ``run_id`` belongs to, up to and including ``run_id``,
    oldest first (empty if the view no longer holds it)."""
    turns = quest.state("turns")
    sessions = quest.state("bash_sessions").sessions
    chain: list[view.TurnRecord] = []
    record = turns.turns.get(run_id)
    while record is not None and record.run_id not in {r.run_id for r in chain}:
        chain.append(record)
        record = turns.turns.get(record.retry_of or "")
    out = []
    for r in reversed(chain):
        attempt = Attempt(run_id=r.run_id, attempt=r.attempt, outcome=r.outcome, reason=r.reason)
        by_id: dict[str, AttemptCall] = {}
        for event in retries.run_events(quest, r):
            match event:
                case RunnerToolCall():
                    by_id[event.call_id] = AttemptCall(call_id=event.call_id, tool=event.tool, status="unfinished",
                                                       arguments=event.arguments)  # fmt: skip
                    attempt.calls.append(by_id[event.call_id])
                case RunnerToolResult():
                    call = by_id.get(event.call_id)
                    if call is not None:
                        call.status, call.output = event.status, event.output
                case ToolCallFinished():
                    tool = f"{event.namespace}.{event.tool}"
                    twin = next((c for c in reversed(attempt.calls) if c.tool == tool and not c.error), None)
                    if twin is not None and event.error_code:
                        twin.error = event.error_code
                    elif twin is None:  # the agent's stream did not show it: our record does
                        attempt.calls.append(AttemptCall(call_id=event.call_id, tool=tool, status=event.status,
                                                         arguments=event.arguments, output=event.result,
                                                         error=event.error_code))  # fmt: skip
                case AgentMessage():
                    attempt.messages[event.message_id] = event.text
                case BashSessionStarted():
                    now = sessions.get(event.session_id)
                    attempt.sessions.append(AttemptSession(
                        session_id=event.session_id, command=event.command, status=now.status if now else "unknown",
                        exit_code=now.exit_code if now else None, idempotency_key=event.idempotency_key,
                    ))  # fmt: skip
        out.append(attempt)
    return out


def retry_note(quest: Quest, retry_of: str, attempt: int) -> str:
    """The note a retry's prompt opens with: that this is a retry, and what the earlier
    attempts did (calls with their outcome, shell sessions with their ids and status),
    so the agent checks and continues instead of doing it again."""
    chain = attempt_chain(quest, retry_of)
    last = chain[-1] if chain else None
    ended = f" ended {last.outcome}{f' ({last.reason})' if last.reason else ''}" if last is not None else " did not finish"
    lines = [
        f"This is attempt {attempt} of a turn whose previous attempt ({retry_of}){ended}. Do not redo what an earlier "
        "attempt finished: check its results below (and in the quest's records) and continue from there."
    ]
    done: list[str] = []
    for a in chain:
        for call in a.calls:
            done.append(f"- attempt {a.attempt}: `{call.tool}` ({call.call_id}) {_outcome(call)}")
        for s in a.sessions:
            code = f", exit {s.exit_code}" if s.exit_code is not None else ""
            done.append(f"- attempt {a.attempt}: started bash session `{s.session_id}` ({s.status}{code}): `{_short(s.command, 120)}`")
    if done:
        cut = len(done) - MAX_NOTE_LINES
        lines += ["", "What the earlier attempts did:"] + ([f"- ({cut} earlier lines left out)"] if cut > 0 else [])
        lines += done[-MAX_NOTE_LINES:]
    if any(a.sessions for a in chain):
        lines += ["", "Those shell sessions exist: read or await them with bash_exec (mode read / await, id) instead of "
                  "starting them again; a start with the same idempotency_key returns the existing session."]  # fmt: skip
    return "\n".join(lines)


def _outcome(call: AttemptCall) -> str:
    if call.status == "ok":
        return f"ok: {_short(msgspec.json.encode(call.output).decode(), 160)}" if call.output is not None else "ok"
    if call.status == "error":
        return f"refused ({call.error})" if call.error else f"failed: {_short(str(call.output), 160)}"
    return "started, no result recorded"


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
