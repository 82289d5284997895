"""Turn commands: decide, claim, record and finish a quest's turns.

The scheduler (:mod:`ds_events.services.runtime.scheduler`) drives these; each is a short
read-decide-append under the log's lock, so two processes hosting turns for the same
quest (``ds run`` while ``ds serve`` runs) can never both start one, and a turn ends
exactly once whoever notices its end first (its host, a restarted host, a pause).

- :func:`next_action`: pure — what the quest needs now (start a turn for queued
  messages, retry a failed one, continue an interrupted one, wait, or nothing).
- :func:`claim_turn`: build the prompt, then under the lock append ``runner.turn_started``
  with the delivery of the queued messages the prompt carries (``mailbox.delivered``,
  consumer ``turn:<run_id>``): a message queued later reaches the agent through
  ``artifact.interact`` instead, once.
- :class:`TurnRecorder`: what the runner parsed from the agent's stream, as events.
- :func:`finish_turn`: ``runner.turn_finished`` once, and a retry when one is due.
- :func:`recover_turns`: a turn whose host died is recorded ``interrupted`` (once), its
  orphaned agent process group killed first.
- :func:`stop_runner`: signal the running turn's agent process group (pause, stop).
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ds_events.bash import procs
from ds_events.crashpoints import crashpoint
from ds_events.errors import Conflict
from ds_events.events import Event, new_event_id
from ds_events.events.base import ts_seconds
from ds_events.events.interaction import MailboxDelivered
from ds_events.events.runner import (
    AgentMessage,
    Reasoning,
    RunnerProcessStarted,
    RunnerToolCall,
    RunnerToolResult,
    TurnFinished,
    TurnOutcome,
    TurnStarted,
)
from ds_events.home import Quest
from ds_events.paths import write_atomic
from ds_events.services.runtime import attempts, prompt as prompt_service, retries
from ds_events.services.runtime.commands import Action, PromptBuilder, PromptRequest, TurnSpec
from ds_events.services.runtime.skills import TOOL_NAMESPACES
from ds_events.services.tool_calls import bounded
from projections import interactions as mailbox, turns as view

__all__ = [
    "Host",
    "TurnRecorder",
    "next_action",
    "turn_prompt",
    "claim_turn",
    "finish_turn",
    "recover_turns",
    "stop_runner",
    "run_dir",
    "MCP_NAMESPACES",
]

MCP_NAMESPACES = TOOL_NAMESPACES  # the servers a runner starts for the agent

E = TypeVar("E", bound=Event)


class Host(msgspec.Struct, frozen=True, kw_only=True):
    """The process hosting turns (``ds run``, ``ds serve``): recorded in each turn so a
    restarted host can tell a dead host's turn from a live one's."""

    name: str
    pid: int
    start: int | None
    boot: str

    @classmethod
    def this_process(cls) -> Host:
        pid = os.getpid()
        return cls(name=socket.gethostname(), pid=pid, start=procs.start_time(pid), boot=procs.boot_id())

    def alive(self) -> bool:
        if self.name and self.name != socket.gethostname():
            return True  # another machine's host: not ours to judge
        return procs.is_alive(self.pid, self.start, self.boot)


def run_dir(quest: Quest, run_id: str) -> Path:
    """``<quest>/.ds/runs/<run_id>`` (confined: a bad id is ``invalid_run_id``)."""
    return prompt_service.prompt_path(quest, run_id).parent


def turn_prompt(quest: Quest, request: PromptRequest) -> str:
    """The scheduler's prompt builder: :mod:`ds_events.services.runtime.prompt` over the quest's
    projections, with the messages this turn delivers and a note for a continuation or
    a retry."""
    note = ""
    if request.retry_of:  # what the failed attempts did, so the retry does not do it again
        note = attempts.retry_note(quest, request.retry_of, request.attempt)
    elif request.continuation:
        note = ("The previous turn was cut off (paused, or its host stopped) before it finished: continue where it "
                "stopped; check running bash sessions and open requests first.")  # fmt: skip
    built = prompt_service.prepare_prompt(
        quest, run_id=request.run_id, runner=request.runner, model=request.model, messages=request.messages,
        turn_note=note, write=False,
    )  # fmt: skip
    return built.text


# -- decisions --------------------------------------------------------------------------


def next_action(status: str, turns: view.State, inbox: mailbox.State, *, archived: bool = False) -> Action:
    """What the quest needs now, from its projections alone (an archived quest needs
    nothing: it runs no turn until it is unarchived)."""
    if turns.running is not None:
        return Action(kind="busy", reason=f"turn {turns.running} is running")
    if status != "active":
        return Action(kind="idle", reason=status)
    if archived:
        return Action(kind="idle", reason="archived")
    if mailbox.pending_items(inbox):
        if turns.held is not None:  # the user wrote to a held turn: it runs again, with the message
            return Action(kind="retry", reason="a message for a held turn", retry_of=turns.held.run_id)
        return Action(kind="start", reason="queued messages")
    if turns.retry is not None:
        plan = turns.retry
        return Action(
            kind="retry", reason=plan.reason, due=ts_seconds(plan.scheduled_at) + plan.delay_s,
            retry_of=plan.run_id, attempt=plan.attempt,
        )  # fmt: skip
    if turns.needs_continuation:
        return Action(kind="continue", reason="the last turn was cut off")
    if turns.held is not None:
        return Action(kind="idle", reason=f"turn {turns.held.run_id} failed and waits for the user")
    return Action(kind="idle", reason="nothing queued")


# -- commands ---------------------------------------------------------------------------


def claim_turn(
    quest: Quest, *, runner: str, model: str, host: Host, build_prompt: PromptBuilder, action: Action
) -> TurnSpec | None:
    """Start a turn for ``action`` (from :func:`next_action`), or None when the quest no
    longer needs one (another host claimed it, a pause arrived)."""
    status, inbox, turns = quest.state("status"), quest.state("interactions"), quest.state("turns")
    messages = list(mailbox.pending_items(inbox))
    retried = turns.turns.get(action.retry_of) if action.retry_of else None
    if retried is not None:  # a retry carries the messages the failed attempt carried
        old = [inbox.inbound[i] for i in retried.message_ids if i in inbox.inbound]
        messages = old + [m for m in messages if m.id not in retried.message_ids]
    skill, skill_reason = prompt_service.select_skill(status, inbox, messages)
    run_id = "run-" + new_event_id()
    request = PromptRequest(
        run_id=run_id, runner=runner, model=model, skill=skill, skill_reason=skill_reason, messages=messages,
        continuation=action.kind == "continue", retry_of=action.retry_of, attempt=action.attempt,
    )  # fmt: skip
    prompt = build_prompt(quest, request)
    directory = run_dir(quest, run_id)
    prompt_file = prompt_service.prompt_path(quest, run_id)
    crashpoint("host.claim.before_prompt_write")
    write_atomic(prompt_file, prompt.encode("utf-8"))
    crashpoint("host.claim.after_prompt_write")
    with quest.transaction() as txn:
        now = next_action(quest.state("status").status, quest.state("turns"), quest.state("interactions"),
                          archived=quest.state("status").archived)  # fmt: skip
        if now.kind not in ("start", "retry", "continue"):
            prompt_file.unlink(missing_ok=True)
            return None
        pending = {m.id: m for m in mailbox.pending_items(quest.state("interactions"))}
        fresh = [m for m in messages if m.id in pending]
        started = TurnStarted(
            run_id=run_id, runner=runner, model=model, skill=skill, skill_reason=skill_reason,
            attempt=action.attempt if retried is not None else 1, retry_of=retried.run_id if retried else None,
            message_ids=[m.id for m in messages], prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
            prompt_path=str(prompt_file.relative_to(quest.root)), prompt_chars=len(prompt),
            host=host.name, host_pid=host.pid, host_start=host.start, host_boot=host.boot,
        )  # fmt: skip
        batch: list[Event] = [started]
        if fresh:
            delivered = MailboxDelivered(
                run_id=run_id, batch_id="mb-" + new_event_id(), message_ids=[m.id for m in fresh],
                message_seqs=[m.seq for m in fresh], consumer=f"turn:{run_id}",
            )  # fmt: skip
            batch.append(delivered)
        crashpoint("host.claim.before_append")
        txn.append(batch)
    crashpoint("host.claim.after_append")
    record = quest.state("turns").turns[run_id]
    return TurnSpec(
        quest_id=quest.id, quest_root=str(quest.root), home=str(quest.home.root), run_id=run_id,
        run_dir=str(directory), prompt=prompt, prompt_path=str(prompt_file), skill=skill, runner=runner,
        model=model, attempt=started.attempt, turn_number=record.number,
        env={"DS_HOME": str(quest.home.root), "DS_QUEST_ID": quest.id}, retry_of=started.retry_of,
    )  # fmt: skip


class TurnRecorder:
    """What a runner parsed from its agent's stream, appended as the turn's events.

    ``last_activity`` (monotonic seconds) moves on every call, and on :meth:`touch` for
    output that is not an event (a progress line): the scheduler's stall watch reads it.
    """

    def __init__(self, quest: Quest, run_id: str, *, runner: str) -> None:
        self.quest = quest
        self.run_id = run_id
        self.actor = f"runner:{runner}"
        self.last_activity = time.monotonic()
        self.messages = 0
        self.tool_calls = 0
        self.usage: dict[str, int] = {}
        self.process: RunnerProcessStarted | None = None

    def touch(self) -> None:
        self.last_activity = time.monotonic()

    def _emit(self, event: E) -> E:
        self.touch()
        return self.quest.emit(msgspec.structs.replace(event, run_id=self.run_id, actor=self.actor))

    def process_started(self, pid: int, command: list[str]) -> None:
        pgid = os.getpgid(pid) if _exists(pid) else pid
        event = RunnerProcessStarted(
            pid=pid, pgid=pgid, start_time=procs.start_time(pid), boot_id=procs.boot_id(), command=list(command)
        )
        self.process = event
        crashpoint("host.runner.before_process_event")
        self._emit(event)
        crashpoint("host.runner.after_process_event")

    def agent_message(self, text: str, message_id: str = "") -> None:
        if text.strip():
            self.messages += 1
            crashpoint("host.recorder.agent_message.before_append")
            self._emit(AgentMessage(text=text, message_id=message_id))
            crashpoint("host.recorder.agent_message.after_append")

    def reasoning(self, text: str) -> None:
        if text.strip():
            self._emit(Reasoning(text=text))
            crashpoint("host.recorder.reasoning.after_append")

    def tool_call(self, call_id: str, tool: str, arguments: Any = None, *, server: str = "") -> None:
        self.tool_calls += 1
        value, _ = bounded(arguments)
        crashpoint("host.recorder.tool_call.before_append")
        self._emit(RunnerToolCall(call_id=call_id, tool=tool, arguments=value, server=server))
        crashpoint("host.recorder.tool_call.after_append")

    def tool_result(self, call_id: str, ok: bool, output: Any = None) -> None:
        value, cut = bounded(output)
        crashpoint("host.recorder.tool_result.before_append")
        self._emit(RunnerToolResult(call_id=call_id, status="ok" if ok else "error", output=value, truncated=cut))
        crashpoint("host.recorder.tool_result.after_append")

    def add_usage(self, usage: dict[str, Any]) -> None:
        self.touch()
        for key, value in usage.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[key] = self.usage.get(key, 0) + value


def finish_turn(
    quest: Quest,
    run_id: str,
    *,
    outcome: TurnOutcome,
    reason: str = "",
    exit_code: int | None = None,
    usage: dict[str, int] | None = None,
    duration_ms: float = 0.0,
    messages: int = 0,
    tool_calls: int = 0,
    max_attempts: int = 1,
    backoff_seconds: float = 0.0,
    backoff_max_seconds: float = 0.0,
    actor: str = "",
) -> TurnFinished | None:
    """Record the end of ``run_id`` unless it is already recorded (then None). A failed
    or stalled turn of an active quest is classified (:mod:`.retries`): a transient
    failure with attempts left gets a retry scheduled, anything else is held for the
    user (``runner.turn_held``), in the same append."""
    record = quest.state("turns").turns.get(run_id)
    if record is None:
        raise Conflict(f"no turn {run_id} in this quest", code="unknown_turn")
    # Read before the lock: classifying reads the turn's events back from the log.
    failure = retries.classify(quest, record, outcome=outcome, reason=reason, exit_code=exit_code)
    with quest.transaction() as txn:
        record = quest.state("turns").turns[run_id]
        if record.outcome is not None:
            return None
        finished = TurnFinished(
            run_id=run_id, outcome=outcome, reason=reason, exit_code=exit_code, usage=dict(usage or {}),
            duration_ms=round(duration_ms, 3), messages=messages, tool_calls=tool_calls, actor=actor,
        )  # fmt: skip
        batch: list[Event] = [finished]
        if failure is not None and quest.state("status").status == "active":
            then = retries.decide(
                record, failure, reason=reason, max_attempts=max_attempts, backoff_seconds=backoff_seconds,
                backoff_max_seconds=backoff_max_seconds, actor=actor,
            )  # fmt: skip
            batch.append(then)
            crashpoint("host.finish.retry_built")
        crashpoint("host.finish.before_append")
        txn.append(batch)
    crashpoint("host.finish.after_append")
    crashpoint("host.finish.retry_after_append", when=len(batch) > 1)
    return finished


def recover_turns(quest: Quest, *, grace_seconds: float = 5.0) -> list[TurnFinished]:
    """Record a running turn whose host process is gone as ``interrupted`` (reason
    ``host_died``), once; its agent's process group, if it outlived the host, is killed
    first. A turn of a live host is left alone."""
    record = view.running_turn(quest.state("turns"))
    if record is None or _host_of(record).alive():
        return []
    crashpoint("host.recover.before_kill")
    _kill_group(record, grace_seconds)
    with quest.transaction() as txn:
        current = view.running_turn(quest.state("turns"))
        if current is None or current.run_id != record.run_id:
            return []
        finished = TurnFinished(run_id=record.run_id, outcome="interrupted", reason="host_died", actor="scheduler")
        crashpoint("host.recover.before_append")
        txn.append(finished)
    crashpoint("host.recover.after_append")
    return [finished]


def stop_runner(quest: Quest, *, grace_seconds: float = 5.0) -> str | None:
    """Signal the running turn's agent process group (TERM, then KILL after the grace);
    returns the turn's run id, or None when no agent process runs. The host records the
    turn's end when it sees the process go."""
    record = view.running_turn(quest.state("turns"))
    if record is None or record.pgid is None:
        return None
    crashpoint("host.stop.before_signal")
    _kill_group(record, grace_seconds)
    crashpoint("host.stop.after_signal")
    return record.run_id


# -- helpers ----------------------------------------------------------------------------


def _host_of(record: view.TurnRecord) -> Host:
    return Host(name=record.host, pid=record.host_pid, start=record.host_start, boot=record.host_boot)


def _kill_group(record: view.TurnRecord, grace_seconds: float) -> None:
    if record.pgid is None or record.pid is None:
        return
    if not procs.is_alive(record.pid, record.proc_start, record.proc_boot) and not procs.group_alive(record.pgid):
        return
    if record.proc_boot and procs.boot_id() and record.proc_boot != procs.boot_id():
        return  # the machine rebooted since: that group is not ours
    procs.signal_group(record.pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline and procs.group_alive(record.pgid):
        time.sleep(0.02)
    if procs.group_alive(record.pgid):
        procs.signal_group(record.pgid, signal.SIGKILL)


def _exists(pid: int) -> bool:
    try:
        os.getpgid(pid)
    except ProcessLookupError:
        return False
    return True

