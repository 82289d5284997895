"""``session/list`` of ``ds acp``: every quest of the home as a session, with its title,
its directory as ``cwd`` and its last event's time as ``updatedAt``, newest first; a
``cwd`` filter; pages; bad input refused with our error and nothing changed."""

from __future__ import annotations

import pytest

import acp
from acp import schema
from ds_events.events import ConversationMessage
from ds_events.home import Home, Quest
from handlers.acp import sessions

from .test_agent_process import Recorder, agent_env, ds_acp

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def three(home: Home, quest: Quest) -> list[str]:
    """q1 (the fixture's), then q2 and q3; q1 gets the newest event."""
    for quest_id, title in (("q2", "Second quest"), ("q3", "Third quest")):
        home.create_quest(title, quest_id=quest_id).close()
    quest.emit(ConversationMessage(role="user", content="latest news"))
    return ["q1", "q3", "q2"]  # newest first


async def test_the_quests_are_listed_as_sessions_newest_first(home: Home, three: list[str]) -> None:
    async with ds_acp(Recorder(), env=agent_env(home)) as (conn, _p):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.agent_capabilities.session_capabilities.list is not None
        listed = await conn.list_sessions()
        under_q2 = await conn.list_sessions(cwd=str(home.quest_root("q2")))
        under_home = await conn.list_sessions(cwd=str(home.root))
        elsewhere = await conn.list_sessions(cwd="/nowhere/else")
        # A listed session loads.
        await conn.load_session(cwd=listed.sessions[-1].cwd, session_id=listed.sessions[-1].session_id)
    assert [s.session_id for s in listed.sessions] == three and listed.next_cursor is None
    for info in listed.sessions:
        with home.open_quest(info.session_id, read_only=True) as q:
            status = q.state("status")
            assert (info.title, info.cwd, info.updated_at) == (status.title, str(q.root), status.updated_at)
            assert info.field_meta["ds_events"]["status"] == status.status
            assert info.field_meta["ds_events"]["health"]["state"] in ("new", "idle")
    updated = [s.updated_at for s in listed.sessions]
    assert updated == sorted(updated, reverse=True)
    assert [s.session_id for s in under_q2.sessions] == ["q2"]
    assert [s.session_id for s in under_home.sessions] == three
    assert elsewhere.sessions == []


async def test_a_bad_cursor_or_a_relative_cwd_is_refused_and_changes_nothing(home: Home, three: list[str]) -> None:
    before = {q: (home.quest_root(q) / ".ds" / "events.jsonl").read_bytes() for q in three}
    async with ds_acp(Recorder(), env=agent_env(home)) as (conn, _p):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        with pytest.raises(acp.RequestError) as bad_cursor:
            await conn.list_sessions(cursor="not-ours")
        with pytest.raises(acp.RequestError) as relative:
            await conn.list_sessions(cwd="quests/q1")
    assert bad_cursor.value.data["error"] == "invalid_cursor" and "nextCursor" in bad_cursor.value.data["message"]
    assert relative.value.data["error"] == "invalid_argument" and relative.value.data["argument"] == "cwd"
    assert home.quest_ids() == sorted(three)
    assert {q: (home.quest_root(q) / ".ds" / "events.jsonl").read_bytes() for q in three} == before


def test_pages_follow_the_cursor_to_the_end(home: Home, three: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "PAGE_SIZE", 2)
    first = sessions.list_sessions(home)
    assert [s.session_id for s in first.sessions] == three[:2] and first.next_cursor
    second = sessions.list_sessions(home, cursor=first.next_cursor)
    assert [s.session_id for s in second.sessions] == three[2:] and second.next_cursor is None
    # The wire form is the schema's.
    wire = first.model_dump(by_alias=True, exclude_none=True)
    assert schema.ListSessionsResponse.model_validate(wire) == first
    assert {"sessionId", "cwd", "title", "updatedAt"} <= set(wire["sessions"][0])
