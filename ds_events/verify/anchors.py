"""Anchors: what places outside the log say about it.

The hash chain shows damage before the last line; anchors show damage at the end. Each
anchor names a seq and the line (its chain hash, or its event id) that seq had:

- the head anchor ``<log>.head`` (last seq + hash + keyed MAC, chained to its past
  heads, kept by appenders) and its witness in the home (a signed copy of the head);
- view snapshots ``<log dir>/snapshots/*.json`` (seq, event id and line hash);
- git checkpoint commits on any branch of the quest repository, whose message ends with
  the trailer ``DS-Log-Head: <seq> <hash>``.

``ds verify`` reports every anchor the log disagrees with (a shortened or rewritten
suffix); ``ds repair`` vouches for lines with them.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

import msgspec

from ..log.anchor import HeadAnchor

__all__ = ["Claim", "Anchors", "collect_anchors", "TRAILER"]

TRAILER = "DS-Log-Head"
_TRAILER_RE = re.compile(rf"^{TRAILER}: (\d+) ([0-9a-f]{{32}})\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Claim:
    """One anchor's statement: seq ``seq`` is the line with ``hash`` (or ``event_id``).

    ``made_at`` (Unix seconds, git commits only) says when the claim was made, so a
    claim from before a ``ds repair`` that rewrote that part of the log is told apart.
    """

    name: str
    seq: int
    hash: str = ""
    event_id: str = ""
    made_at: float | None = None


@dataclass
class Anchors:
    """Every claim found, and what was wrong with the anchors themselves."""

    claims: list[Claim] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # which anchors were looked at
    head_missing: bool = False
    # The head slot holds a copy of this past head (name, seq): a rollback to its seq.
    rollbacks: list[tuple[str, int]] = field(default_factory=list)
    signed: bool = False  # the head anchor or witness carries a MAC


class _Snapshot(msgspec.Struct):
    seq: int = 0
    event_id: str = ""
    line_hash: str = ""


def collect_anchors(
    path: str,
    *,
    key: bytes | None = None,
    repo: str | os.PathLike[str] | None = None,
    witness: str | os.PathLike[str] | None = None,
) -> Anchors:
    """The anchors of the log at ``path``. With ``key``, the head anchor's MACs must
    check, the chain of its past heads included (an unsigned, forged, cut or
    rolled-back record is a problem and its claim is not used); ``witness``: the home's
    copy of the log's head, checked likewise; with ``repo``, the trailers of every
    commit on its branches are read."""
    out = Anchors()
    _head(path, key, None if witness is None else os.fspath(witness), out)
    _snapshots(path, out)
    if repo is not None:
        _trailers(os.fspath(repo), out)
    return out


def _head(path: str, key: bytes | None, witness: str | None, out: Anchors) -> None:
    anchor = HeadAnchor(path, key, witness=witness)
    name = anchor.name
    found = anchor.check()
    out.problems.extend(found.problems)
    out.signed = found.signed
    if found.rolled_back is not None:
        out.rollbacks.append((name, found.rolled_back.seq))
    if found.missing:
        out.head_missing = True
    else:
        out.checked.append(name + (f" (and {len(found.past)} past head(s))" if found.past else ""))
    if found.head is not None:
        out.claims.append(Claim(name, found.head.seq, found.head.hash))
    out.claims.extend(Claim(f"{name} (past head {h.seq})", h.seq, h.hash) for h in found.past)
    if found.witness is not None:
        out.checked.append(anchor.witness_name)
        out.claims.append(Claim(anchor.witness_name, found.witness.seq, found.witness.hash))


def _snapshots(path: str, out: Anchors) -> None:
    directory = os.path.join(os.path.dirname(path), "snapshots")
    for snap_path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        name = f"snapshot {os.path.relpath(snap_path, os.path.dirname(path))}"
        try:
            with open(snap_path, "rb") as f:
                snap = msgspec.json.decode(f.read(), type=_Snapshot)
        except (OSError, msgspec.DecodeError):
            continue  # a snapshot is a cache: an unreadable one is rebuilt, not evidence
        if snap.seq:
            out.checked.append(name)
            out.claims.append(Claim(name, snap.seq, snap.line_hash, snap.event_id))


def _trailers(repo_path: str, out: Anchors) -> None:
    import pygit2  # only here: most commands never need it

    try:
        repo = pygit2.Repository(repo_path)
    except (pygit2.GitError, KeyError):
        return
    seen: set[str] = set()
    for branch_name in sorted(repo.branches.local):
        branch = repo.branches.local[branch_name]
        walker = repo.walk(branch.target, pygit2.enums.SortMode.TOPOLOGICAL)
        for commit in walker:
            oid = str(commit.id)
            if oid in seen:
                continue
            seen.add(oid)
            for seq, line_hash in _TRAILER_RE.findall(commit.message):
                name = f"git commit {oid[:10]} on {branch_name} ({TRAILER})"
                out.claims.append(Claim(name, int(seq), line_hash, made_at=float(commit.commit_time)))
    if seen:
        out.checked.append(f"{len(seen)} git commit(s) of {repo_path}")
