"""The head anchor's records: their stored format, their MACs, and whether they check.

A record is a JSON line padded with spaces to a fixed size (:data:`RECORD` bytes; the
witness's one record :data:`WITNESS_RECORD`). Format 1 signs a head on its own, format 2
chains it (see :mod:`.anchor`, which keeps the files). :func:`check_records` tells which
records of an anchor file check with a key and what is wrong with the others: this is
what ``ds verify`` reports and what makes an appender refuse a log.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

import msgspec

__all__ = [
    "Anchor", "AnchorCheck", "Record", "head_mac", "anchor_mac", "mac_message", "check_records", "past_checks",
    "encode", "peek", "parse", "parse_file", "parse_or_none", "RECORD", "WITNESS_RECORD",
]  # fmt: skip

RECORD = 192  # bytes of one fixed-size record (a JSON line padded with spaces)
WITNESS_RECORD = 320  # the witness's one record: a head and the MAC it follows


class Record(msgspec.Struct, omit_defaults=True):
    seq: int
    hash: str
    mac: str = ""
    v: int = 1  # 1: signed on its own; 2: chained (see the module's docstring)
    kind: str = "head"  # head | past
    n: int = 0  # head: the past heads it follows; past: its position (1 …)
    prev: str = ""  # the witness's copy of the head: the MAC the head follows


@dataclass(frozen=True)
class Anchor:
    """One record: a head's seq and line hash, its MAC ("" if none), and (format 2) its
    kind and ``n``. ``source`` says where it was read (for messages; not signed)."""

    seq: int
    hash: str
    mac: str = ""
    version: int = 1
    kind: str = "head"
    n: int = 0
    source: str = "head anchor"
    prev: str = ""  # (a witness: the MAC its head follows)

    def verified_by(self, key: bytes, prev: str = "") -> bool:
        """Whether the MAC checks with ``key``; ``prev`` is the MAC this record follows
        (format 2: the previous past head's, or the ``n``-th past head's for a head)."""
        return bool(self.mac) and hmac.compare_digest(self.mac, _mac_of(key, self, prev))


@dataclass
class AnchorCheck:
    """What the anchor file and the witness say once checked against a key.

    ``head``, ``past`` and ``witness`` are the records that check (or every record, with
    no key in play); ``problems`` says what is wrong with the others. ``rolled_back`` is
    the past head whose copy holds the head slot (a rollback to its seq), if one does.
    """

    head: Anchor | None = None
    past: list[Anchor] = field(default_factory=list)
    witness: Anchor | None = None
    problems: list[str] = field(default_factory=list)
    rolled_back: Anchor | None = None
    missing: bool = False  # there is no head anchor (no file, or no record in it)
    refusal: str = ""  # why an appender must not append ("" if it may)
    signed: bool = False  # some record carries a MAC (to see a key gone missing)

    def claims(self) -> list[Anchor]:
        """The heads that check (head anchor and witness) which the log must hold."""
        return [a for a in (self.head, self.witness) if a is not None]


def head_mac(key: bytes, seq: int, line_hash: str) -> str:
    """The format-1 MAC of a head: HMAC-SHA256 over the seq and the line hash."""
    return hmac.digest(key, b"ds-events log head\0%d\0%s" % (seq, line_hash.encode()), "sha256").hex()


def anchor_mac(key: bytes, kind: str, n: int, seq: int, line_hash: str, prev: str) -> str:
    """The format-2 MAC of a record: over its kind, ``n``, seq and line hash, and the
    MAC of the record it follows (``prev``)."""
    return hmac.digest(key, mac_message(kind, n, seq, line_hash, prev), "sha256").hex()


def mac_message(kind: str, n: int, seq: int, line_hash: str, prev: str) -> bytes:
    return b"ds-events log anchor 2\0%s\0%d\0%d\0%s\0%s" % (kind.encode(), n, seq, line_hash.encode(), prev.encode())


def check_records(
    head: Anchor | None, history: list[Anchor], key: bytes | None, name: str, *, past: bool = True
) -> AnchorCheck:
    """Check a head and (if ``past``) its past heads with ``key`` (see the module's docstring)."""
    out = AnchorCheck(missing=head is None and not history)
    out.signed = any(r.mac for r in (head, *history) if r is not None)
    prev = ""
    for n, record in enumerate(history if past else [], start=1):
        what = f"{name} (past head {record.seq})"
        if key is None:
            out.past.append(record)
        elif not record.mac:
            out.problems.append(f"{what} is not signed with this home's key: it cannot vouch for the log")
        elif past_checks(record, n, prev, key):
            out.past.append(record)
        elif record.version >= 2 and (record.kind != "past" or record.n != n):
            out.problems.append(
                f"{what} is not record {n} of the file's chain of past heads: records were moved, removed or slipped in"
            )
        else:
            out.problems.append(
                f"{what}: its MAC does not match this home's key (the anchor was edited, or signed elsewhere)"
                + (" or the record before it" if record.version >= 2 else "")
            )
        prev = record.mac
    if head is None:
        if history:
            out.problems.append(f"{name} holds past heads but no head record")
            out.refusal = out.problems[-1]
        return out
    if key is None:
        out.head = head
        return out
    if not head.mac:
        out.problems.append(f"{name} is not signed with this home's key: it cannot vouch for the log")
        return out  # (an appender may replace it: it claims nothing)
    if head.version == 1 and head.verified_by(key):
        out.head = head  # format 1: signed on its own (see the module's docstring)
        return out
    is_head = head.version >= 2 and head.kind == "head"
    if is_head and head.n > len(history):
        out.problems.append(
            f"{name}: its head (seq {head.seq}) follows {head.n} past heads but the file holds {len(history)}: "
            "past-head records were cut from it (the anchor was rolled back)"
        )
        out.refusal = out.problems[-1]
        return out
    if is_head and head.verified_by(key, history[head.n - 1].mac if head.n else ""):
        out.head = head
        return out
    copied = _copied_past(head, history, key)
    if copied is not None:
        out.rolled_back = copied
        out.refusal = (
            f"the head slot of its {name} holds a copy of its past head of seq {copied.seq}, not a head record: "
            "the log and its anchor were rolled back to an earlier head"
        )
    else:
        out.problems.append(f"{name}: its MAC does not match this home's key (the anchor was edited, or signed elsewhere)")
        out.refusal = out.problems[-1]
    return out


def past_checks(record: Anchor, n: int, prev: str, key: bytes) -> bool:
    """Whether ``record``, the ``n``-th past head after a record whose MAC is ``prev``, checks."""
    if record.version == 1:
        return record.verified_by(key)
    return record.kind == "past" and record.n == n and record.verified_by(key, prev)


def _copied_past(head: Anchor, history: list[Anchor], key: bytes) -> Anchor | None:
    """The past head whose record (perhaps relabelled) holds the head slot: a past head
    of any position, including one cut from the history since (the position after its
    last record), whatever its labels say. Only run when the head does not check."""
    for n in range(1, len(history) + 2):
        prev = history[n - 2].mac if n >= 2 else ""
        if hmac.compare_digest(head.mac, anchor_mac(key, "past", n, head.seq, head.hash, prev)):
            return Anchor(head.seq, head.hash, head.mac, 2, "past", n)
    return None


def _mac_of(key: bytes, record: Anchor, prev: str) -> str:
    if record.version == 1:
        return head_mac(key, record.seq, record.hash)
    return anchor_mac(key, record.kind, record.n, record.seq, record.hash, prev)


def encode(record: Record, *, witness: bool = False) -> bytes:
    """One padded record; ``prev`` is stored only in the witness's copy of the head."""
    if record.prev and not witness:
        record = Record(record.seq, record.hash, record.mac, record.v, record.kind, record.n)
    data = _ENCODER.encode(record)
    return data + b" " * ((WITNESS_RECORD if witness else RECORD) - 1 - len(data)) + b"\n"


_ENCODER = msgspec.json.Encoder()


def peek(data: bytes) -> tuple[int, int]:
    """The seq and format of a stored head, cheaply (every write reads it); (0, 2) if
    there is none or it is garbled (a fresh record replaces it)."""
    if data.startswith(b'{"seq":'):
        end = data.find(b",", 7)
        if end > 7 and data[7:end].isdigit():
            return int(data[7:end]), 2 if b',"v":2' in data else 1
    return 0, 2


def parse_file(data: bytes) -> tuple[Anchor | None, list[Anchor]]:
    if not data:
        return None, []
    head = parse(data[:RECORD])
    history = [parse(data[i : i + RECORD]) for i in range(RECORD, len(data) - RECORD + 1, RECORD)]
    return head, [h for h in history if h is not None]


def parse(data: bytes, *, source: str = "head anchor") -> Anchor | None:
    if not data.strip():
        return None
    try:
        record = msgspec.json.decode(data.strip(), type=Record)
    except msgspec.DecodeError:
        raise ValueError(f"the {source} is not a valid record") from None
    return Anchor(record.seq, record.hash, record.mac, record.v, record.kind, record.n, source, record.prev)


def parse_or_none(data: bytes) -> Anchor | None:
    try:
        return parse(data)
    except ValueError:
        return None  # garbled: a fresh record replaces it
