"""What a read costs: bytes read from the file, counted by wrapping ``os.pread``.

Counting bytes (not time) keeps these exact on a loaded machine.
"""

from __future__ import annotations

import os

import pytest

from ds_events.events import ConversationMessage
from ds_events.log import INDEX_EVERY, EventLog

PAGE = 100


class ReadCounter:
    """Wraps ``os.pread``: the bytes and calls of every read (the real call still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = os.pread
        self.bytes = 0
        self.calls = 0
        monkeypatch.setattr(os, "pread", self)

    def __call__(self, fd: int, n: int, offset: int) -> bytes:
        data = self.real(fd, n, offset)
        self.bytes += len(data)
        self.calls += 1
        return data

    def measure(self, fn) -> int:
        self.bytes = 0
        fn()
        return self.bytes


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    """20,000 events of about 150 bytes: 3 MB, several times the largest read."""
    path = tmp_path_factory.mktemp("big") / "events.jsonl"
    with EventLog(path, quest_id="q", actor="t", policy="never") as log:
        log.append([ConversationMessage(role="user", content=f"message {i}") for i in range(20_000)])
    return path


def test_a_page_costs_what_it_returns_wherever_it_is(big_log, monkeypatch):
    with EventLog(big_log, quest_id="q") as log:
        n = log.last_seq
        line_bytes = os.path.getsize(big_log) / n
        counter = ReadCounter(monkeypatch)
        cost = {
            where: counter.measure(lambda a=after: log.read(after_seq=a, limit=PAGE))
            for where, after in {"head": 0, "middle": n // 2 + 17, "tail": n - PAGE}.items()
        }
    # At most the page plus the lines between the index entry and the page, twice over
    # (reads double in size), wherever the page is: never a fixed 1 MiB.
    bound = 2 * (PAGE + INDEX_EVERY) * line_bytes + 64 * 1024
    assert all(c <= bound for c in cost.values()), (cost, bound)
    assert cost["head"] <= 2 * cost["tail"] and cost["middle"] <= 2 * cost["tail"], cost


def test_a_single_event_is_read_without_reading_a_megabyte(big_log, monkeypatch):
    with EventLog(big_log, quest_id="q") as log:
        counter = ReadCounter(monkeypatch)
        assert counter.measure(lambda: log.get(12_345)) <= 64 * 1024
