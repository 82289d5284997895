"""A minimal real commit target for the group commit tests (not a test module).

:class:`LineFile` appends text lines to a real file, one ``write`` per group, and syncs
it with the real ``os.fdatasync``: the smallest thing that satisfies
``ds_events.log.group.CommitTarget``, so group commit can be tested through its own
interface. Its ``gate`` stands for the append lock held elsewhere: while it is closed,
``try_write`` declines and ``write`` waits.
"""

from __future__ import annotations

import os
import threading


class LineFile:
    def __init__(self, path: str, policy: str = "group") -> None:
        self.path = path
        self.policy = policy
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self.gate = threading.Event()
        self.gate.set()
        self.writing = threading.Event()  # set once a write waits at the closed gate
        self.writes = 0
        self.acks = 0
        self.groups: list[list[list[str]]] = []
        self._lock = threading.Lock()
        self._count = 0

    def write(self, batches: list[list[str]]) -> tuple[list[list[tuple[int, str]]], int]:
        if not self.gate.is_set():
            self.writing.set()
            assert self.gate.wait(30), "the test never opened the gate"
        with self._lock:
            return self._write(batches)

    def try_write(self, batches: list[list[str]]) -> tuple[list[list[tuple[int, str]]], int] | None:
        if not self.gate.is_set() or not self._lock.acquire(blocking=False):
            return None
        try:
            return self._write(batches)
        finally:
            self._lock.release()

    def sync_through(self, end: int) -> None:
        os.fdatasync(self.fd)

    def acknowledged(self) -> None:
        with self._lock:
            self.acks += 1

    def lines(self) -> list[str]:
        with open(self.path) as f:
            return f.read().splitlines()

    def close(self) -> None:
        os.close(self.fd)

    def _write(self, batches: list[list[str]]) -> tuple[list[list[tuple[int, str]]], int]:
        results, data = [], []
        for batch in batches:
            stored = []
            for item in batch:
                self._count += 1
                stored.append((self._count, item))
                data.append(f"{item}\n")
            results.append(stored)
        os.write(self.fd, "".join(data).encode())
        self.writes += 1
        self.groups.append([list(b) for b in batches])
        return results, os.fstat(self.fd).st_size
