"""Huge lines (issue 11 item 7): events above ``max_event_bytes`` are refused at append,
and reading a line of tens of megabytes costs linear work, not its square.

Work is counted, not timed: the bytes read through ``os.pread``, and the bytes that
``bytes`` methods (find, split, rfind ...) were called on, seen through
``sys.setprofile``. Re-joining a growing carry per 1 MiB chunk and splitting it again
(the old scanner) shows up there as about (line length / 1 MiB) / 2 times the line.
"""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from ds_events.errors import ServiceError
from ds_events.events import ConversationMessage
from ds_events.log import MAX_EVENT_BYTES, EventLog
from ds_events.verify import verify_log


def msg(i: int, pad: int = 0) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}" + "x" * pad)


class Work:
    """Bytes read by os.pread, and bytes that bytes methods ran over, inside ``with``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read = 0
        self.scanned = 0
        real = os.pread

        def pread(fd: int, n: int, offset: int) -> bytes:
            data = real(fd, n, offset)
            self.read += len(data)
            return data

        monkeypatch.setattr(os, "pread", pread)

    def _profile(self, frame, event, arg):
        if event == "c_call" and type(getattr(arg, "__self__", None)) is bytes:
            self.scanned += len(arg.__self__)

    def __enter__(self) -> Work:
        self.read = self.scanned = 0
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)


def test_an_event_larger_than_max_event_bytes_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "events.jsonl"
    with EventLog(path, quest_id="q", policy="group", max_event_bytes=10_000) as log:
        log.append(msg(0))
        before = path.read_bytes()
        with pytest.raises(ServiceError) as caught:
            log.append(msg(1, pad=20_000))
        assert caught.value.code == "event_too_large" and caught.value.details["limit"] == 10_000
        assert "log.max_event_bytes" in caught.value.message
        with pytest.raises(ServiceError, match="larger than the log accepts"):
            log.append([msg(2), msg(3, pad=20_000), msg(4)])  # the whole batch
        with pytest.raises(ServiceError, match="larger than the log accepts"):
            with log.transaction() as txn:
                txn.append(msg(5, pad=20_000))
        assert path.read_bytes() == before
        assert log.append(msg(6)).seq == 2  # the handle is still fine
    assert EventLog.__init__.__kwdefaults__["max_event_bytes"] == MAX_EVENT_BYTES == 8 << 20
    assert verify_log(str(path)).ok


@pytest.mark.parametrize("policy", ["group", "always"])
async def test_a_refused_append_in_a_group_fails_alone(tmp_path, policy):
    path = tmp_path / "events.jsonl"
    with EventLog(path, quest_id="q", policy=policy, max_event_bytes=10_000) as log:
        results = await asyncio.gather(
            *(log.append_async([msg(i), msg(100 + i, pad=20_000 if i == 3 else 0)]) for i in range(8)),
            return_exceptions=True,
        )
        refused = [r for r in results if isinstance(r, BaseException)]
        assert len(refused) == 1 and getattr(refused[0], "code", "") == "event_too_large"
        stored = [e for r in results if not isinstance(r, BaseException) for e in r]
        assert sorted(e.seq for e in stored) == list(range(1, 15))
        assert all(e.content != "m3" for e in log.read())
    assert verify_log(str(path)).ok


@pytest.mark.slow
@pytest.mark.parametrize("where", ["middle", "last"])
def test_reading_a_line_of_tens_of_megabytes_costs_work_linear_in_its_length(tmp_path, monkeypatch, where):
    path = tmp_path / "events.jsonl"
    huge = 48 << 20
    with EventLog(path, quest_id="q", policy="never", max_event_bytes=64 << 20) as log:
        log.append([msg(i) for i in range(10)])
        log.append(msg(10, pad=huge))
        if where == "middle":
            log.append([msg(i) for i in range(11, 21)])
    size = os.path.getsize(path)
    work = Work(monkeypatch)
    costs: dict[str, tuple[int, int]] = {}

    def measure(name, fn):
        with work:
            fn()
        costs[name] = (work.read, work.scanned)

    handles: list[EventLog] = []
    measure("open", lambda: handles.append(EventLog(path, quest_id="q")))
    log = handles[0]
    try:
        measure("last_seq", lambda: log.last_seq)
        measure("tail 12", lambda: log.tail(12))
        measure("read the huge event", lambda: log.read(after_seq=10, limit=1))
        measure("all lines", lambda: list(log.iter_lines()))
    finally:
        log.close()
    # A few passes over the line each (the count charges a method its whole line even
    # when it stops early); the old scanner's carry cost 25 passes at 48 MB, and more
    # the longer the line.
    for name, (read, scanned) in costs.items():
        assert read <= 4 * size, f"{name}: read {read:,} bytes of a {size:,}-byte log"
        assert scanned <= 10 * size, f"{name}: bytes methods ran over {scanned:,} bytes of a {size:,}-byte log"
    assert costs["read the huge event"][1] >= size  # the check sees the work it bounds
