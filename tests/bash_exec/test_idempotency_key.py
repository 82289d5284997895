"""``bash_exec``'s ``idempotency_key`` through an in-process MCP client, with real
monitors: the same key in the same quest returns the session it started (same id,
``reused: true``) instead of starting another; the key with another command is refused
(``idempotency_key_conflict``) and starts nothing; a bad key is refused before
anything starts."""

from __future__ import annotations

import asyncio

from ds_events.services import bash as service
from ds_events.services.bash.commands import StartSession

from .support import bash_events, call, call_error, client_for


def sessions(quest) -> int:
    return len(quest.state("bash_sessions").sessions)


async def test_the_same_key_returns_the_session_it_started(quest):
    async with client_for(quest) as c:
        first = await call(c, command="echo trained", mode="detach", idempotency_key="train-lr-0.1")
        again = await call(c, command="echo trained", mode="detach", idempotency_key="train-lr-0.1")
        awaited = await call(c, command="echo trained", mode="await", idempotency_key="train-lr-0.1", wait_timeout_seconds=20)
        other = await call(c, command="echo trained", mode="detach", idempotency_key="train-lr-0.2")
        plain = await call(c, command="echo trained", mode="detach")
    assert first["reused"] is False and again["reused"] is True and awaited["reused"] is True
    assert first["bash_id"] == again["bash_id"] == awaited["bash_id"] != other["bash_id"]
    assert "not started again" in again["message"]
    assert awaited["done"] is True and awaited["log"] == "trained"
    assert "reused" not in plain  # no key, no word about reuse
    started = [e for e in bash_events(quest) if e.type == "bash.session_started"]
    assert [e.idempotency_key for e in started] == ["train-lr-0.1", "train-lr-0.2", None]
    assert sessions(quest) == 3


async def test_the_key_with_another_command_is_refused_and_starts_nothing(quest):
    async with client_for(quest) as c:
        first = await call(c, command="echo one", mode="detach", idempotency_key="step-3")
        before = sessions(quest)
        error = await call_error(c, command="echo two", mode="detach", idempotency_key="step-3")
        assert error["error"] == "idempotency_key_conflict" and error["session_id"] == first["id"]
        assert "step-3" in error["message"]
        for bad in ("", "x" * 201, "tab\there"):
            refused = await call_error(c, command="echo three", mode="detach", idempotency_key=bad)
            assert refused["error"] == "invalid_idempotency_key"
        refused = await call_error(c, mode="read", id=first["id"], idempotency_key="step-3")
        assert refused["error"] == "unexpected_argument"  # only a start takes a key
    assert sessions(quest) == before == 1
    assert [e.type for e in bash_events(quest)].count("bash.session_started") == 1


async def test_two_starts_racing_with_one_key_record_one_session(quest):
    cmd = StartSession(command="echo raced", idempotency_key="once")
    results = await asyncio.gather(*(service.start_or_reuse_async(quest, cmd) for _ in range(4)))
    ids = {session.id for session, _reused in results}
    assert len(ids) == 1 and sorted(reused for _s, reused in results) == [False, True, True, True]
    assert sessions(quest) == 1
