"""One ACP tool-call card per call: the agent's view of a call and our server's record of
it folded under one ``toolCallId`` (pure, no I/O).

A call to one of our MCP tools is seen twice in the log: the runner parses it from the
agent's stream (``runner.tool_call`` / ``runner.tool_result``, ids the agent chose), and
our MCP server records it (``tool.call_started`` / ``tool.call_finished``, ids it chose).
Nothing carries both ids, so the halves are paired by this rule:

- only within one turn (both halves carry the turn's ``run_id``: the runner stamps its
  own events, and the MCP servers it starts get ``DS_RUN_ID``); a record without a
  ``run_id`` (an MCP client outside a turn) and a runner call of a tool that is not ours
  (``shell``, ``file_change``) are never paired;
- by tool name: the runner's ``memory.write`` is our ``memory`` / ``write``;
- in order: the oldest unpaired half of the other side with that name and the same
  arguments (``env`` values aside: the record keeps only their keys), else the oldest
  with that name (an argument the record bounded or rewrote still pairs).

A bash session that an awaited ``bash_exec`` call starts (our record announced the call,
and it is the one such call open in the turn) is part of that call: its start, progress
and end update the call's card. A detached session outlives the call that started it
(which finished at once) and keeps its own card, ``bash:<session id>``.

Whichever half comes first opens the card (``tool_call``; its id is that half's id as
:mod:`projections.acp` names it), every later event of either half updates it
(``tool_call_update``). A card's status only moves forward — ``pending`` <
``in_progress`` < ``completed`` / ``failed`` — and ``failed`` wins over ``completed`` (if
either view says the call failed, it failed): a late ``runner.tool_call`` after our record
already finished does not turn a done card back to "in progress".

:func:`apply` folds an event; :attr:`State.placed` says where the last one landed. The
state forgets a turn's unpaired halves when the turn finishes, so it stays small on an
endless stream. A stream that starts in the middle of a turn (``--after``) pairs only the
halves it saw: prime it with the turn's earlier events (:func:`apply` without sending).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ds_events.events import Event
from ds_events.events.bash import BashKillRequested, BashProgress, BashSessionExited, BashSessionLost, BashSessionStarted
from ds_events.events.runner import RunnerToolCall, RunnerToolResult, TurnFinished
from ds_events.events.tool import ToolCallFinished, ToolCallStarted

__all__ = ["State", "Placed", "CardStatus", "OUR_NAMESPACES", "initial", "apply", "runner_card_id"]

CardStatus = Literal["pending", "in_progress", "completed", "failed"]
# The MCP namespaces whose calls our servers record (the runtime's MCP_NAMESPACES).
OUR_NAMESPACES = frozenset({"memory", "artifact", "bash_exec"})
_RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 3}


class Placed(msgspec.Struct, frozen=True, kw_only=True):
    """Where an event landed: its card, whether it opened the card, the card's status
    after it."""

    card: str
    opens: bool
    status: CardStatus


class _Half(msgspec.Struct, frozen=True, kw_only=True):
    """One side's view of a call that waits for the other side's."""

    card: str
    key: str  # "namespace.tool"
    arguments: Any = None


class State(msgspec.Struct, kw_only=True):
    cards: dict[str, str] = {}  # "runner:<run>:<call id>" | "tool:<call id>" -> card id
    status: dict[str, CardStatus] = {}  # card id -> its status so far
    waiting: dict[str, list[_Half]] = {}  # "runner:<run>" | "tool:<run>" -> unpaired halves, oldest first
    halves: dict[str, list[str]] = {}  # run id -> the half ids of its calls (forgotten at its end)
    awaiting: dict[str, list[str]] = {}  # run id -> cards of its announced bash_exec calls still open
    placed: Placed | None = None  # the last event's card (None: not a tool-call event)
    last_seq: int = 0


def initial() -> State:
    return State()


def runner_card_id(run_id: str | None, call_id: str) -> str:
    """The id of a card a runner's call opens (the agent's ids are unique per turn only)."""
    return f"{run_id or 'turn'}:{call_id}"


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    state.placed = None
    match event:
        case RunnerToolCall():
            run = event.run_id or ""
            key = _runner_key(event)
            _open_or_join(
                state, half=f"runner:{run}:{event.call_id}", side="runner", run=run, key=key,
                arguments=event.arguments, own_card=runner_card_id(event.run_id, event.call_id), status="in_progress",
            )  # fmt: skip
        case RunnerToolResult():
            card = state.cards.get(f"runner:{event.run_id or ''}:{event.call_id}")
            _update(state, card or runner_card_id(event.run_id, event.call_id), _done(event.status))
        case ToolCallStarted():
            if event.namespace == "bash_exec" and event.run_id:
                state.awaiting.setdefault(event.run_id, []).append("")  # its card, filled below
            _open_or_join(
                state, half=f"tool:{event.call_id}", side="tool", run=event.run_id or "",
                key=f"{event.namespace}.{event.tool}", arguments=event.arguments, own_card=event.call_id,
                status="in_progress",
            )  # fmt: skip
            if event.namespace == "bash_exec" and event.run_id and state.placed is not None:
                state.awaiting[event.run_id][-1] = state.placed.card
        case ToolCallFinished(started=True):
            half = f"tool:{event.call_id}"
            card = state.cards.get(half, event.call_id)
            _update(state, card, _done(event.status))
            open_calls = state.awaiting.get(event.run_id or "", [])
            if card in open_calls:
                open_calls.remove(card)
            if not event.run_id:  # outside a turn nothing will pair with it: forget it now
                state.status.pop(state.cards.pop(half, ""), None)
        case ToolCallFinished():  # a quick call, logged once after it ran
            _open_or_join(
                state, half=f"tool:{event.call_id}", side="tool", run=event.run_id or "",
                key=f"{event.namespace}.{event.tool}", arguments=event.arguments, own_card=event.call_id,
                status=_done(event.status),
            )  # fmt: skip
        case BashSessionStarted():
            open_calls = state.awaiting.get(event.run_id or "", [])
            if len(open_calls) == 1:  # started by the one awaited call open: the call's card
                state.cards[f"bash:{event.session_id}"] = open_calls[0]
                state.halves.setdefault(event.run_id or "", []).append(f"bash:{event.session_id}")
                _update(state, open_calls[0], "in_progress")
        case BashProgress() | BashKillRequested():
            _session_update(state, event.session_id, "in_progress")
        case BashSessionExited():
            _session_update(state, event.session_id, "completed" if event.status == "completed" else "failed")
        case BashSessionLost():
            _session_update(state, event.session_id, "failed")
        case TurnFinished():
            _forget(state, event.run_id or "")
    return state


# -- private helpers -------------------------------------------------------------------


def _runner_key(event: RunnerToolCall) -> str | None:
    """``namespace.tool`` of a runner's call to one of our servers, else None."""
    namespace, _, tool = event.tool.partition(".")
    if event.server and event.server != namespace:  # an agent that names tools by the bare name
        namespace, tool = event.server, event.tool
    return f"{namespace}.{tool}" if namespace in OUR_NAMESPACES and tool else None


def _open_or_join(
    state: State, *, half: str, side: str, run: str, key: str | None, arguments: Any, own_card: str, status: CardStatus
) -> None:
    if half in state.cards:  # the same half seen again (a runner replaying a line): same card
        _update(state, state.cards[half], status)
        return
    other = "tool" if side == "runner" else "runner"
    match = _take(state.waiting.get(f"{other}:{run}", []), key, arguments) if run and key else None
    if match is not None:
        state.cards[half] = match.card
        state.halves.setdefault(run, []).append(half)
        _update(state, match.card, status)
        return
    state.placed = Placed(card=own_card, opens=True, status=status)
    if not run and _RANK[status] >= _RANK["completed"]:
        return  # whole already, and outside a turn nothing will pair with it: keep nothing
    state.cards[half] = own_card
    state.status[own_card] = status
    if run:
        state.halves.setdefault(run, []).append(half)
        if key:
            state.waiting.setdefault(f"{side}:{run}", []).append(_Half(card=own_card, key=key, arguments=arguments))


def _take(waiting: list[_Half], key: str | None, arguments: Any) -> _Half | None:
    """Remove and return the oldest half named ``key`` with the same arguments, else the
    oldest named ``key``."""
    named = [i for i, h in enumerate(waiting) if h.key == key]
    if not named:
        return None
    same = _comparable(arguments)
    chosen = next((i for i in named if _comparable(waiting[i].arguments) == same), named[0])
    return waiting.pop(chosen)


def _comparable(arguments: Any) -> Any:
    """Arguments as both sides store them: an ``env`` by its keys (its values are redacted
    in our record)."""
    if isinstance(arguments, dict) and isinstance(arguments.get("env"), dict):
        return {**arguments, "env": sorted(arguments["env"])}
    return arguments


def _update(state: State, card: str, status: CardStatus) -> None:
    before = state.status.get(card)
    after = status if before is None or _RANK[status] > _RANK[before] else before
    if before is not None:  # a card this fold opened (else one from before the stream began)
        state.status[card] = after
    state.placed = Placed(card=card, opens=False, status=after)


def _session_update(state: State, session_id: str, status: CardStatus) -> None:
    card = state.cards.get(f"bash:{session_id}")
    if card is not None:  # a session of a call's card (else it has a card of its own)
        _update(state, card, status)


def _done(status: str) -> CardStatus:
    return "completed" if status == "ok" else "failed"


def _forget(state: State, run: str) -> None:
    """Drop what a finished turn's cards kept (the halves, their statuses)."""
    for half in state.halves.pop(run, []):
        card = state.cards.pop(half, None)
        if card is not None:
            state.status.pop(card, None)
    state.waiting.pop(f"runner:{run}", None)
    state.waiting.pop(f"tool:{run}", None)
    state.awaiting.pop(run, None)
