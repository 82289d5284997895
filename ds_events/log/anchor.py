"""The head anchor: the log's last seq and line hash, kept outside the log, chained.

The hash chain shows an edited, removed or moved line anywhere *before* the last one;
it cannot show a shortened log, an edited last line, or a suffix replaced by forged
lines re-chained with the public hash. The anchor can: ``<log>.head`` names the head
(seq and line hash) and carries a keyed MAC (HMAC-SHA256) with a key kept in the home
(``$DS_HOME/.ds/log.key``, created 0600 on first use), so rewriting the log's end means
forging the anchor too, which needs the key.

Appenders update the anchor after each sync (so it only ever names a durable head;
policy ``never``, which does not sync, every few writes and on close), under a
``flock`` of the anchor file. The file is fixed-size records (a JSON line padded with
spaces): the first is the head, rewritten in place; each time the head passes a power
of two below ``HISTORY_EVERY`` or a multiple of it, a *past head* is also appended, so
that when the end of a log disagrees with its head, ``ds repair`` can still vouch for
the lines up to the last past head it agrees with. ``ds verify`` checks them all;
``ds repair`` is the one tool that resets the file.

**Rollback.** Signing each record on its own is not enough: whoever can write the quest
could cut the log back to a past head's seq and copy that past head into the head slot,
and every record would still check. So the records are bound together (format 2):

- a past head's MAC covers its kind (``past``), its position ``n`` in the file (1, 2 …),
  its seq and hash, and the MAC of the record before it: the history is a chain, which
  can lose records only from its end and into which nothing can be slipped;
- the head's MAC covers its kind (``head``), its seq and hash, the number ``n`` of past
  heads it follows and the MAC of the ``n``-th: it vouches for the history up to it, so
  cutting the history below it shows; and a past head copied into the head slot does
  not check as a head (``ds verify`` names it: a rollback to that seq);
- under the file's lock a writer never replaces a later head with an earlier one, so
  the head only moves forward, whichever process wrote last.

Every earlier head record is overwritten in place, so the quest's files hold no record
an earlier state could be rebuilt from. What they cannot show is a *copy taken earlier*
and put back (the ``.head`` file, or the whole quest directory). That is what the
**witness** is for: ``$DS_HOME/.ds/heads/<log name>.head``, a copy of the head record
(with ``prev``, the MAC it follows, so that it checks on its own) that the writers keep
beside the key, outside the quest, on every update. A log that ends before the seq its
witness names, or holds another line there, is reported (and refused by appenders) like
one that disagrees with its head anchor. A log created afresh (its file did not exist)
starts a new witness. The records are in :mod:`.headrecord`.

**Upgrade from format 1** (records without ``"v"``, each signed on its own over seq and
hash: :func:`head_mac`). Such files keep verifying: their records are read and checked
as before, and a format-1 head is accepted (it can only be the file's own, or an old
copy: format-2 MACs use another message, so no format-2 record can pass for one). The
first head a writer of this version records re-signs the file's format-1 past heads as
a format-2 chain (under the file's lock, each checked first; one that does not check
stops the upgrade and this handle's anchor updates, for ``ds verify`` to report), then
writes a format-2 head; from then on only format 2 is written. An older ds-events
still running would go on writing format 1 until it is restarted.
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import os
from collections.abc import Iterator

from .headrecord import (
    RECORD,
    Anchor,
    AnchorCheck,
    Record,
    anchor_mac,
    check_records,
    encode,
    head_mac,
    mac_message,
    parse,
    parse_file,
    parse_or_none,
    past_checks,
    peek,
)

__all__ = [
    "Anchor", "AnchorCheck", "HeadAnchor", "load_key", "read_key", "head_mac", "anchor_mac",
    "KEY_PATH", "WITNESS_DIR", "HISTORY_EVERY",
]  # fmt: skip

KEY_PATH = os.path.join(".ds", "log.key")  # under the home
WITNESS_DIR = os.path.join(".ds", "heads")  # under the home: each log's head witness, <name>.head
HISTORY_EVERY = 1024  # a head is also kept for good each time it passes a multiple of this
_RECORD = RECORD  # (the name tests that also run against older versions read)


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
    """The anchor file of the log at ``log_path`` (``<log>.head``), and its witness.

    ``key`` signs what this handle writes and checks what it reads. A handle without a
    key never overwrites an anchor that carries a MAC: it leaves it behind rather than
    weaken it. ``witness``: the path of the log's head witness in the home (None: none
    is kept, as for a log opened outside a home). ``sync``: sync a new past head before
    a head binds it (False for a log under policy ``never``, which syncs nothing).
    """

    def __init__(
        self,
        log_path: str,
        key: bytes | None = None,
        *,
        witness: str | None = None,
        history_every: int = HISTORY_EVERY,
        sync: bool = True,
    ) -> None:
        self.log_path = log_path
        self.path = log_path + ".head"
        self.key = key
        self.witness = witness
        self.history_every = history_every
        self.sync = sync  # whether a past head is synced before a head binds it (not under policy never)
        self._fd: int | None = None
        self._wfd: int | None = None  # the witness, opened on first write (-1: it cannot be written)
        self._written = 0  # the highest seq this handle wrote (skip older heads cheaply)
        self._log_ino: tuple[int, int] | None = None  # (log fd, its inode)
        self._chain: tuple[int, str] | None = None  # (past heads in the file, MAC of the last) as last seen
        self._mac_base: hmac.HMAC | None = None

    @property
    def name(self) -> str:
        return f"head anchor {os.path.basename(self.path)}"

    @property
    def witness_name(self) -> str:
        where = os.path.join(*os.path.normpath(self.witness).split(os.sep)[-3:]) if self.witness else ""
        return f"head witness {where} (in the home)"

    def read(self) -> Anchor | None:
        """The current head, or None if there is none. Raises ValueError if garbled."""
        return self.read_all()[0]

    def read_all(self) -> tuple[Anchor | None, list[Anchor]]:
        """The current head and the recorded past heads, oldest first, as stored
        (unchecked). Raises ValueError if a record is garbled."""
        data, _witness = self._read()
        return parse_file(data)

    def read_witness(self) -> Anchor | None:
        """The witness's record, or None. Raises ValueError if garbled."""
        _data, witness = self._read()
        return parse(witness, source=self.witness_name)

    def _read(self) -> tuple[bytes, bytes]:
        """The anchor file's bytes and the witness's, read under the anchor file's lock
        (which writers hold while they write either)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return b"", _read_file(self.witness)
        try:
            with _flocked(fd, fcntl.LOCK_SH):
                return os.pread(fd, os.fstat(fd).st_size, 0), _read_file(self.witness)
        finally:
            os.close(fd)

    def check(self, *, past: bool = True) -> AnchorCheck:
        """Read the anchor file and the witness and check them with this handle's key
        (every record is taken as it is when there is no key). A garbled record is a
        problem (and a refusal), like one that does not check. ``past=False`` leaves
        the chain of past heads unchecked (an appender opening the log needs only the
        head, which binds the last of them, and the witness; ``ds verify`` checks all)."""
        data, witness_data = self._read()
        try:
            head, history = parse_file(data)
        except ValueError as exc:
            out = AnchorCheck(problems=[f"{self.name}: {exc}"], refusal=f"{self.name}: {exc}")
        else:
            out = check_records(head, history, self.key, self.name, past=past)
        try:
            witness = parse(witness_data, source=self.witness_name)
        except ValueError as exc:
            witness = None
            out.problems.append(str(exc))
            out.refusal = out.refusal or str(exc)
        if witness is not None:
            out.signed = out.signed or bool(witness.mac)
            if self.key is None or (witness.kind == "head" and witness.verified_by(self.key, witness.prev)):
                out.witness = witness
            else:
                problem = f"the {self.witness_name} does not check with this home's key (edited, or signed elsewhere)"
                out.problems.append(problem)
                out.refusal = out.refusal or problem
        return out

    def write(self, seq: int, line_hash: str, log_fd: int) -> None:
        """Record ``(seq, line_hash)`` of the log open at ``log_fd`` as the head (and in
        the witness), unless a later head is recorded already (by this handle or
        another process), or the log's path now names another file (``ds repair``
        replaced it: what we synced is history). Failures (a full disk) are left for
        ``ds verify`` to notice: the anchor then lags, which it tolerates, and the
        append that got here stands.

        This runs after every sync, so it costs, under the anchor's ``flock``, one
        ``stat`` of the log, a ``pread`` of the head (the head only moves forward), one
        MAC and one ``pwrite`` each for the head and the witness; a past head, when one
        is due, one more MAC, ``pwrite`` and ``fdatasync``.
        """
        if seq <= self._written:
            return
        try:
            if self._fd is None and not self._open(seq):
                return
            assert self._fd is not None
            if self._log_ino is None or self._log_ino[0] != log_fd:
                self._log_ino = (log_fd, os.fstat(log_fd).st_ino)
            with _flocked(self._fd, fcntl.LOCK_EX):  # against ds repair's reset and other writers
                if os.stat(self.log_path).st_ino != self._log_ino[1]:
                    return
                current, version = peek(os.pread(self._fd, RECORD, 0))
                if current >= seq:
                    self._written = seq  # another process recorded a later head: ours is history
                    return
                if version == 1 and self.key is not None and not self._upgrade():
                    self._written = 1 << 62  # a record that does not check is not re-signed: verify reports it
                    return
                count, last_mac = self._chain_end()
                if _era(current, self.history_every) < _era(seq, self.history_every):
                    count += 1
                    past = self._record("past", count, seq, line_hash, last_mac)
                    os.pwrite(self._fd, encode(past), count * RECORD)
                    # On disk before a head binds it: after a power cut the file may lose
                    # its newest head, never a past head that head follows (which would
                    # read as a cut history). Rare: ten times in a young log, then one per
                    # HISTORY_EVERY seqs; never under policy never, which promises nothing.
                    if self.sync:
                        os.fsync(self._fd)
                    last_mac = past.mac
                    self._chain = (count, last_mac)
                head = self._record("head", count, seq, line_hash, last_mac)
                os.pwrite(self._fd, encode(head), 0)
                self._write_witness(head)
            self._written = seq
        except OSError:
            return

    def forget(self) -> None:
        """The log was replaced or rewritten: what this handle wrote says nothing now."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._written = 0
        self._log_ino = None
        self._chain = None

    def drop_witness(self) -> None:
        """The log was created afresh: a witness left by an earlier log of this name
        (its quest deleted, then made again) says nothing about this one."""
        if self.witness is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.witness)

    def reset(self, seq: int, line_hash: str) -> None:
        """Replace the anchor, its history and the witness whatever they say (``ds
        repair``, which rewrote the log: past heads name lines of the old one)."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            with _flocked(fd, fcntl.LOCK_EX):
                os.ftruncate(fd, 0)
                head = self._record("head", 0, seq, line_hash, "")
                os.pwrite(fd, encode(head), 0)
                os.fsync(fd)
                self._write_witness(head, sync=True)
        finally:
            os.close(fd)
        self._written = seq
        self._chain = None

    def close(self) -> None:
        for fd in (self._fd, self._wfd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._fd = self._wfd = None

    # -- internals --------------------------------------------------------------------

    def _open(self, seq: int) -> bool:
        """Open the anchor file on first use; False if this handle must not write it."""
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        current = parse_or_none(os.pread(self._fd, RECORD, 0))
        if current is not None:
            if current.mac and self.key is None:
                self._written = 1 << 62  # never replace a signed anchor with an unsigned one
                return False
            self._written = current.seq  # ahead of us (another process): wait until we pass it
        return seq > self._written

    def _record(self, kind: str, n: int, seq: int, line_hash: str, prev: str) -> Record:
        """A format-2 record signed with this handle's key (``prev`` kept on it for the
        witness; :func:`encode` leaves it out of the anchor file)."""
        if self.key is None:
            return Record(seq, line_hash, "", 2, kind, n, prev)
        if self._mac_base is None:  # the keyed state, computed once and copied per MAC
            self._mac_base = hmac.new(self.key, digestmod="sha256")
        mac = self._mac_base.copy()
        mac.update(mac_message(kind, n, seq, line_hash, prev))
        return Record(seq, line_hash, mac.hexdigest(), 2, kind, n, prev)

    def _chain_end(self) -> tuple[int, str]:
        """Under the lock: how many past heads the file holds and the last one's MAC
        (read again only when another writer appended one since we last looked)."""
        assert self._fd is not None
        count = max(0, os.fstat(self._fd).st_size // RECORD - 1)
        if self._chain is None or self._chain[0] != count:
            last = parse_or_none(os.pread(self._fd, RECORD, count * RECORD)) if count else None
            self._chain = (count, last.mac if last is not None else "")
        return self._chain

    def _upgrade(self) -> bool:
        """Under the lock: re-sign a format-1 history as a format-2 chain (see the
        module's docstring). False, having changed nothing, if a record does not check."""
        assert self._fd is not None and self.key is not None
        head, history = _read_fd(self._fd)
        if head is not None and head.version == 1 and not head.verified_by(self.key):
            return False
        chain: list[Record] = []
        stored_prev = prev = ""  # the MAC the stored record follows; the one its re-signed copy does
        for n, record in enumerate(history, start=1):
            if not past_checks(record, n, stored_prev, self.key):
                return False
            chain.append(self._record("past", n, record.seq, record.hash, prev))
            stored_prev, prev = record.mac, chain[-1].mac
        if chain:
            os.pwrite(self._fd, b"".join(encode(r) for r in chain), RECORD)
            if self.sync:
                os.fsync(self._fd)  # before a head binds it (see write)
        self._chain = (len(chain), prev)
        return True

    def _write_witness(self, head: Record, *, sync: bool = False) -> None:
        """Under the anchor file's lock: copy the head, with the MAC it follows, into the
        witness (readers read it under that lock too); a witness that cannot be written
        (its directory is not ours to write) is given up for this handle, not retried."""
        if self.witness is None or self._wfd == -1:
            return
        try:
            if self._wfd is None:
                os.makedirs(os.path.dirname(self.witness), mode=0o700, exist_ok=True)
                self._wfd = os.open(self.witness, os.O_RDWR | os.O_CREAT, 0o600)
            os.pwrite(self._wfd, encode(head, witness=True), 0)
            if sync:
                os.fsync(self._wfd)
        except OSError:
            if self._wfd is not None and self._wfd >= 0:
                os.close(self._wfd)
            self._wfd = -1


def _era(seq: int, every: int) -> int:
    """Which stretch of the log ``seq`` is in: the head is kept for good each time it
    enters a new one. Stretches double up to ``every`` seqs (1, 2-3, 4-7 ...), then
    are ``every`` long: a young log gets past heads soon, a long one one per ``every``."""
    return seq.bit_length() if seq < every else every.bit_length() + seq // every


def _read_file(path: str | None) -> bytes:
    if path is None:
        return b""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def _read_fd(fd: int) -> tuple[Anchor | None, list[Anchor]]:
    """Every record of the open anchor file (garbled ones left out), under its lock."""
    data = os.pread(fd, os.fstat(fd).st_size, 0)
    head = parse_or_none(data[:RECORD])
    history = [parse_or_none(data[i : i + RECORD]) for i in range(RECORD, len(data) - RECORD + 1, RECORD)]
    return head, [h for h in history if h is not None]


@contextlib.contextmanager
def _flocked(fd: int, how: int) -> Iterator[None]:
    fcntl.flock(fd, how)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
