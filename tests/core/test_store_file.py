"""The JSONL file log passes the store contract, and both stores have the protocol's shape."""

from __future__ import annotations

import inspect

import pytest

from ds_events.log import EventLog, Transaction
from ds_events.log.postgres import PgTransaction, PostgresStore
from ds_events.store import EventStore, StoreTransaction

from .store_contract import StoreContract


@pytest.mark.parametrize(
    "protocol, cls",
    [(EventStore, EventLog), (StoreTransaction, Transaction), (EventStore, PostgresStore), (StoreTransaction, PgTransaction)],
)
def test_each_store_has_every_member_of_the_protocol_with_the_same_parameters(protocol, cls):
    members = [name for name in protocol.__dict__ if not name.startswith("_") and callable(getattr(protocol, name))]
    assert members, "the protocol names no methods"
    for name in members:
        ours = inspect.signature(getattr(cls, name))
        theirs = inspect.signature(getattr(protocol, name))
        assert list(ours.parameters) == list(theirs.parameters), f"{cls.__name__}.{name}{ours} vs {theirs}"
        for p in theirs.parameters.values():  # same defaults and kinds
            mine = ours.parameters[p.name]
            assert (mine.kind, mine.default) == (p.kind, p.default), f"{cls.__name__}.{name}: {p.name}"
    props = [name for name, v in protocol.__dict__.items() if isinstance(v, property)]
    assert all(isinstance(getattr(cls, name), property) for name in props)


class TestFileLog(StoreContract):
    @pytest.fixture(params=["always", "group", "never"])
    def open_store(self, tmp_path, request):
        path = tmp_path / "events.jsonl"

        def factory(actor: str = "test") -> EventLog:
            return EventLog(path, quest_id="q", actor=actor, policy=request.param)

        return factory
