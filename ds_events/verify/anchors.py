"""Anchors: what places outside the log say about it.

The hash chain shows damage before the last line; anchors show damage at the end. Each
anchor names a seq and the line (its chain hash, or its event id) that seq had:

- the head anchor ``<log>.head`` (last seq + hash + keyed MAC, kept by appenders);
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


class _Snapshot(msgspec.Struct):
    seq: int = 0
    event_id: str = ""
    line_hash: str = ""


def collect_anchors(path: str, *, key: bytes | None = None, repo: str | os.PathLike[str] | None = None) -> Anchors:
    """The anchors of the log at ``path``. With ``key``, the head anchor's MAC must check
    (an unsigned or forged head anchor is a problem and its claim is not used); with
    ``repo``, the trailers of every commit on its branches are read."""
    out = Anchors()
    _head(path, key, out)
    _snapshots(path, out)
    if repo is not None:
        _trailers(os.fspath(repo), out)
    return out


def _head(path: str, key: bytes | None, out: Anchors) -> None:
    anchor = HeadAnchor(path)
    name = f"head anchor {os.path.basename(anchor.path)}"
    try:
        head, history = anchor.read_all()
    except ValueError as exc:
        out.problems.append(f"{name}: {exc}")
        return
    if head is None:
        out.head_missing = True
        return
    out.checked.append(name + (f" (and {len(history)} past head(s))" if history else ""))
    for record, what in [(head, name), *((h, f"{name} (past head {h.seq})") for h in history)]:
        if key is not None and not record.mac:
            out.problems.append(f"{what} is not signed with this home's key: it cannot vouch for the log")
        elif key is not None and not record.verified_by(key):
            out.problems.append(f"{what}: its MAC does not match this home's key (the anchor was edited, or signed elsewhere)")
        else:
            out.claims.append(Claim(what, record.seq, record.hash))


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
