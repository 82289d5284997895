"""The head anchor: the log's last seq and line hash, kept outside the log.

The hash chain shows an edited, removed or moved line anywhere *before* the last one;
it cannot show a shortened log, an edited last line, or a suffix replaced by forged
lines re-chained with the public hash. The anchor can: ``<log>.head`` names the head
(seq and line hash) and carries a keyed MAC (HMAC-SHA256) with a key kept in the home
(``$DS_HOME/.ds/log.key``, created 0600 on first use), so rewriting the log's end means
forging the anchor too, which needs the key.

Appenders update the anchor after each sync (so it only ever names a durable head;
policy ``never``, which does not sync, after each write), under a ``flock`` of the
anchor file. The first record, a fixed-size line, is the current head, rewritten in
place; each time the head passes a power of two below ``HISTORY_EVERY`` or a multiple
of it, a signed record of it is also appended after it, so that when
the end of a log disagrees with its head, ``ds repair`` can still vouch for the lines up
to the last recorded head it agrees with. ``ds verify`` checks them all; ``ds repair``
is the one tool that resets the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import os
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec

__all__ = ["Anchor", "HeadAnchor", "load_key", "read_key", "head_mac", "KEY_PATH", "HISTORY_EVERY"]

KEY_PATH = os.path.join(".ds", "log.key")  # under the home
HISTORY_EVERY = 1024  # a head is also kept for good each time it passes a multiple of this
_RECORD = 192  # bytes of one fixed-size record (a JSON line padded with spaces)


class _Record(msgspec.Struct):
    seq: int
    hash: str
    mac: str = ""


@dataclass(frozen=True)
class Anchor:
    """What the anchor says: the head's seq and line hash, and its MAC ("" if none)."""

    seq: int
    hash: str
    mac: str = ""

    def verified_by(self, key: bytes) -> bool:
        return bool(self.mac) and hmac.compare_digest(self.mac, head_mac(key, self.seq, self.hash))


def head_mac(key: bytes, seq: int, line_hash: str) -> str:
    """The MAC of a head: HMAC-SHA256 over the seq and the line hash."""
    return hmac.new(key, b"ds-events log head\0%d\0%s" % (seq, line_hash.encode()), hashlib.sha256).hexdigest()


def load_key(home: str | os.PathLike[str]) -> bytes:
    """The home's log key, created (32 random bytes, mode 0600) on first use."""
    path = os.path.join(os.fspath(home), KEY_PATH)
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    key = os.urandom(32)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # the first process to create it wins; the others read it
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    with open(path, "rb") as f:
        return f.read()


def read_key(home: str | os.PathLike[str]) -> bytes | None:
    """The home's log key if it has one (never creates it: for read-only commands)."""
    try:
        with open(os.path.join(os.fspath(home), KEY_PATH), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


class HeadAnchor:
    """The anchor file of the log at ``log_path`` (``<log>.head``).

    ``key`` signs what this handle writes. A handle without a key never overwrites an
    anchor that carries a MAC: it leaves it behind rather than weaken it.
    """

    def __init__(self, log_path: str, key: bytes | None = None, *, history_every: int = HISTORY_EVERY) -> None:
        self.log_path = log_path
        self.path = log_path + ".head"
        self.key = key
        self.history_every = history_every
        self._fd: int | None = None
        self._written = 0  # the highest seq this handle wrote (skip older heads cheaply)
        self._log_ino: tuple[int, int] | None = None  # (log fd, its inode)

    def read(self) -> Anchor | None:
        """The current head, or None if there is none. Raises ValueError if garbled."""
        return self.read_all()[0]

    def read_all(self) -> tuple[Anchor | None, list[Anchor]]:
        """The current head and the recorded past heads, oldest first. Raises
        ValueError if a record is garbled."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None, []
        try:
            with _flocked(fd, fcntl.LOCK_SH):
                data = os.pread(fd, os.fstat(fd).st_size, 0)
        finally:
            os.close(fd)
        head = _parse(data[:_RECORD])
        history = [_parse(data[i : i + _RECORD]) for i in range(_RECORD, len(data) - _RECORD + 1, _RECORD)]
        return head, [h for h in history if h is not None]

    def write(self, seq: int, line_hash: str, log_fd: int) -> None:
        """Record ``(seq, line_hash)`` of the log open at ``log_fd`` as the head, unless
        this handle already wrote a later one, or the log's path now names another
        file (``ds repair`` replaced it: what we synced is history). Failures (a full
        disk) are left for ``ds verify`` to notice: the anchor then lags, which it
        tolerates, and the append that got here stands.

        This runs after every sync, so it costs one ``stat`` and one ``pwrite`` under the
        anchor's ``flock``. Writers do not read the anchor each time: two processes may
        write in either order, so it can name an older head for a moment, which is
        still a true one.
        """
        if seq <= self._written:
            return
        try:
            if self._fd is None and not self._open(seq):
                return
            assert self._fd is not None
            if self._log_ino is None or self._log_ino[0] != log_fd:
                self._log_ino = (log_fd, os.fstat(log_fd).st_ino)
            mac = head_mac(self.key, seq, line_hash) if self.key is not None else ""
            record = _encode(seq, line_hash, mac)
            with _flocked(self._fd, fcntl.LOCK_EX):  # against ds repair's reset (see above)
                if os.stat(self.log_path).st_ino != self._log_ino[1]:
                    return
                os.pwrite(self._fd, record, 0)
                if _era(self._written, self.history_every) < _era(seq, self.history_every):
                    os.pwrite(self._fd, record, max(os.fstat(self._fd).st_size, _RECORD))
            self._written = seq
        except OSError:
            return

    def _open(self, seq: int) -> bool:
        """Open the anchor file on first use; False if this handle must not write it."""
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            current = _parse(os.pread(self._fd, _RECORD, 0))
        except ValueError:
            current = None  # garbled: a fresh record replaces it
        if current is not None:
            if current.mac and self.key is None:
                self._written = 1 << 62  # never replace a signed anchor with an unsigned one
                return False
            self._written = current.seq  # ahead of us (another process): wait until we pass it
        return seq > self._written

    def forget(self) -> None:
        """The log was replaced or rewritten: what this handle wrote says nothing now."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._written = 0
        self._log_ino = None

    def reset(self, seq: int, line_hash: str) -> None:
        """Replace the anchor and its history whatever they say (``ds repair``, which
        rewrote the log: past heads name lines of the old one)."""
        mac = head_mac(self.key, seq, line_hash) if self.key is not None else ""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            with _flocked(fd, fcntl.LOCK_EX):
                os.ftruncate(fd, 0)
                os.pwrite(fd, _encode(seq, line_hash, mac), 0)
                os.fsync(fd)
        finally:
            os.close(fd)
        self._written = seq

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _era(seq: int, every: int) -> int:
    """Which stretch of the log ``seq`` is in: the head is kept for good each time it
    enters a new one. Stretches double up to ``every`` seqs (1, 2-3, 4-7 ...), then
    are ``every`` long: a young log gets past heads soon, a long one one per ``every``."""
    return seq.bit_length() if seq < every else every.bit_length() + seq // every


def _encode(seq: int, line_hash: str, mac: str) -> bytes:
    data = msgspec.json.encode(_Record(seq=seq, hash=line_hash, mac=mac))
    return data + b" " * (_RECORD - 1 - len(data)) + b"\n"


def _parse(data: bytes) -> Anchor | None:
    if not data.strip():
        return None
    try:
        record = msgspec.json.decode(data.strip(), type=_Record)
    except msgspec.DecodeError:
        raise ValueError("the head anchor is not a valid record") from None
    return Anchor(record.seq, record.hash, record.mac)


@contextlib.contextmanager
def _flocked(fd: int, how: int) -> Iterator[None]:
    fcntl.flock(fd, how)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
