"""Tamper evidence (issue 11 item 3): read-only opening, no silent recovery below a
known head, anchors outside the log that ``verify`` checks, a repair that quarantines
what it cannot vouch for, and a checked sparse index.

Each hole of the issue has a test here that failed before the fix; the last test is the
audit re-run: many random edits, every one detected.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import pygit2
import pytest

from ds_events.errors import LogError
from ds_events.events import ConversationMessage, decode_line, encode
from ds_events.log import EventLog, line_hash
from ds_events.log.anchor import HeadAnchor, anchor_mac, load_key
from ds_events.verify import repair_log, verify_log

KEY = b"k" * 32


def msg(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}")


def lines_of(path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def write_lines(path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def make_log(path, n: int, *, key: bytes | None = KEY, batch: int = 1) -> None:
    with EventLog(path, quest_id="q", actor="t", policy="group", key=key) as log:
        for i in range(0, n, batch):
            log.append([msg(j) for j in range(i, min(n, i + batch))])


def forge_suffix(lines: list[bytes], start: int) -> list[bytes]:
    """Replace lines[start:] with forged events re-chained with the public hash."""
    out = lines[:start]
    prev = line_hash(out[-1]) if out else ""
    for line in lines[start:]:
        event = decode_line(line)
        forged = encode(
            ConversationMessage(
                seq=event.seq, id=event.id, ts=event.ts, quest_id=event.quest_id, actor=event.actor,
                prev=prev, more=event.more, role="user", content="forged " + event.content,
            )
        )  # fmt: skip
        out.append(forged)
        prev = line_hash(forged)
    return out


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "events.jsonl"
    make_log(p, 100)
    return p


def anchors_caught(report) -> set[str]:
    return {p.anchor.split(" ")[0] for p in report.problems if p.anchor}


# -- read-only opening -----------------------------------------------------------------


def test_a_read_only_handle_never_recovers_truncates_or_appends(path):
    with open(path, "ab") as f:
        f.write(b'{"type":"conversation.message","seq":101,"id":"torn')
    before = path.read_bytes()
    os.remove(str(path) + ".lock")
    with EventLog(path, quest_id="q", read_only=True) as log:
        assert log.torn is not None and "torn last line" in log.torn.reason
        assert log.torn.offset == before.index(b'{"type":"conversation.message","seq":101')
        assert log.last_seq == 100 and [e.seq for e in log.tail(2)] == [99, 100]
        with pytest.raises(LogError, match="read-only"):
            log.append(msg(1))
        with pytest.raises(LogError, match="read-only"):
            with log.transaction():
                pass
    assert path.read_bytes() == before
    assert not os.path.exists(str(path) + ".lock")
    assert not (path.parent / "quarantine").exists()


def test_a_read_only_handle_on_a_missing_log_says_so_and_creates_nothing(tmp_path):
    with pytest.raises(LogError, match="no log at"):
        EventLog(tmp_path / "none.jsonl", read_only=True)
    assert list(tmp_path.iterdir()) == []


# -- no silent recovery below a known head ---------------------------------------------


def test_a_mid_file_truncation_is_not_recovered_by_opening_and_verify_reports_it(path):
    lines = lines_of(path)
    cut = sum(len(x) + 1 for x in lines[:49]) + 30  # inside line 50
    os.truncate(path, cut)
    before = path.read_bytes()
    with EventLog(path, quest_id="q", key=KEY) as log:  # an appender opens it
        assert log.recovered is None and log.torn is not None
        assert log.last_seq == 49
        with pytest.raises(LogError, match=r"shrank below a head it had.*ds repair"):
            log.append(msg(1))
    assert path.read_bytes() == before  # nothing cut, nothing appended
    report = verify_log(str(path), key=KEY)
    assert any("names seq 100" in p.reason and p.anchor.startswith("head anchor") for p in report.problems)


def test_an_appender_refuses_a_log_cut_back_at_a_line_end(path):
    lines = lines_of(path)
    write_lines(path, lines[:60])
    with EventLog(path, quest_id="q", key=KEY) as log:
        with pytest.raises(LogError, match="ends at seq 60 but its head anchor names seq 100"):
            log.append(msg(1))
    assert lines_of(path) == lines[:60]


def test_a_torn_tail_from_a_crash_is_still_recovered_on_open(path):
    # The anchor names only synced heads: a crashed write's fragment lies beyond it.
    with open(path, "ab") as f:
        f.write(b'{"type":"conversation.message","seq":101,"id":"half')
    with EventLog(path, quest_id="q", key=KEY) as log:
        assert log.recovered is not None and log.append(msg(1)).seq == 102
    assert verify_log(str(path), key=KEY).ok


# -- anchors: the head anchor ------------------------------------------------------------


def test_the_head_anchor_names_the_durable_head_with_a_mac_bound_to_its_past_heads(path):
    anchor, history = HeadAnchor(str(path)).read_all()
    assert anchor is not None and anchor.seq == 100 and (anchor.version, anchor.kind) == (2, "head")
    assert anchor.hash == line_hash(lines_of(path)[-1])
    assert [h.seq for h in history] == [1, 2, 4, 8, 16, 32, 64] and anchor.n == 7
    assert anchor.mac == anchor_mac(KEY, "head", 7, 100, anchor.hash, history[-1].mac)
    assert anchor.verified_by(KEY, history[-1].mac)
    assert not anchor.verified_by(KEY, history[-2].mac) and not anchor.verified_by(b"x" * 32, history[-1].mac)
    prev = ""
    for n, past in enumerate(history, start=1):  # each past head follows the one before it
        assert (past.kind, past.n) == ("past", n) and past.mac == anchor_mac(KEY, "past", n, past.seq, past.hash, prev)
        prev = past.mac


def test_verify_catches_an_edited_last_line(path):
    lines = lines_of(path)
    lines[-1] = lines[-1].replace(b'"m99"', b'"m99!"')
    write_lines(path, lines)
    report = verify_log(str(path), key=KEY)
    assert [(p.line, p.anchor) for p in report.problems] == [(100, "head anchor events.jsonl.head")]


@pytest.mark.parametrize("k", [1, 2, 50])
def test_verify_catches_the_last_lines_deleted(path, k):
    write_lines(path, lines_of(path)[:-k])
    report = verify_log(str(path), key=KEY)
    assert not report.ok
    assert f"the log ends at seq {100 - k} but the head anchor events.jsonl.head names seq 100" in report.problems[0].reason


def test_verify_catches_a_forged_suffix_rechained_with_the_public_hash(path):
    write_lines(path, forge_suffix(lines_of(path), 90))
    report = verify_log(str(path), key=KEY)
    assert [p.anchor for p in report.problems] == ["head anchor events.jsonl.head"]


def test_a_rewritten_head_anchor_without_the_key_is_caught(path):
    lines = forge_suffix(lines_of(path)[:-3], 90)
    write_lines(path, lines)
    # The forger rewrites the anchor too, but can only sign with a key of their own.
    HeadAnchor(str(path), b"f" * 32).reset(97, line_hash(lines[-1]))
    report = verify_log(str(path), key=KEY)
    assert any("MAC does not match" in p.reason for p in report.problems)
    with EventLog(path, quest_id="q", key=KEY) as log:
        with pytest.raises(LogError, match="MAC does not match"):
            log.append(msg(1))


# -- anchors: snapshots and git trailers -------------------------------------------------


def test_snapshots_record_the_line_hash_and_verify_checks_them(tmp_path):
    from ds_events.views import Views
    from projections.status import PROJECTION as STATUS

    path = tmp_path / "events.jsonl"
    make_log(path, 50)
    with EventLog(path, quest_id="q", key=KEY) as log:
        Views(log, tmp_path, [STATUS]).load().save_snapshots()
    snap = (tmp_path / "snapshots" / "status.json").read_bytes()
    assert line_hash(lines_of(path)[49]).encode() in snap
    lines = forge_suffix(lines_of(path), 40)
    write_lines(path, lines)
    os.remove(str(path) + ".head")  # without the head anchor, the snapshot still catches it
    report = verify_log(str(path))
    assert [p.anchor for p in report.problems] == ["snapshot snapshots/status.json"]


def commit_with_trailer(repo: pygit2.Repository, branch: str, seq: int, line: bytes) -> None:
    sig = pygit2.Signature("t", "t@localhost")
    tree = repo.TreeBuilder().write()
    parents = [repo.branches.local[branch].target] if branch in repo.branches.local else []
    message = f"checkpoint\n\nDS-Log-Head: {seq} {line_hash(line)}\n"
    repo.create_commit(f"refs/heads/{branch}", sig, sig, message, tree, parents)


def test_verify_checks_the_log_head_trailers_of_commits_on_every_branch(tmp_path):
    root = tmp_path / "quest"
    path = root / ".ds" / "events.jsonl"
    make_log(path, 80, key=None)
    repo = pygit2.init_repository(str(root), initial_head="main")
    lines = lines_of(path)
    commit_with_trailer(repo, "main", 40, lines[39])
    commit_with_trailer(repo, "idea-x", 70, lines[69])
    assert verify_log(str(path), repo=root).ok
    os.remove(str(path) + ".head")
    write_lines(path, forge_suffix(lines, 60)[:75])
    report = verify_log(str(path), repo=root)
    caught = [p.anchor for p in report.problems if not p.anchor.startswith("index")]  # (entries moved too)
    assert len(caught) == 1 and caught[0].startswith("git commit") and "on idea-x" in caught[0]


def test_a_trailer_from_before_a_repair_is_noted_not_reported(tmp_path):
    root = tmp_path / "quest"
    path = root / ".ds" / "events.jsonl"
    make_log(path, 30, key=None)
    repo = pygit2.init_repository(str(root), initial_head="main")
    lines = lines_of(path)
    sig = pygit2.Signature("t", "t@localhost", 1_000_000_000, 0)  # long before the repair
    tree = repo.TreeBuilder().write()
    repo.create_commit("refs/heads/main", sig, sig, f"c\n\nDS-Log-Head: 25 {line_hash(lines[24])}\n", tree, [])
    del lines[10]
    write_lines(path, lines)
    repair_log(str(path), quest_id="q", repo=root)
    report = verify_log(str(path), repo=root)
    assert report.ok, report.problems
    assert any("before `ds repair`" in note for note in report.notes)


# -- repair vouches ------------------------------------------------------------------------


def test_repair_quarantines_an_edited_line_instead_of_rechaining_around_it(path):
    lines = lines_of(path)
    lines[40] = lines[40].replace(b'"m40"', b'"m40 (edited)"')
    write_lines(path, lines)
    report = repair_log(str(path), quest_id="q", key=KEY)
    assert [(u.seq, u.line) for u in report.unvouched] == [(41, 41)]
    assert b"m40 (edited)" in (path.parent / report.quarantine_path).read_bytes()
    assert b"m40 (edited)" not in path.read_bytes()
    assert report.event is not None and report.event.unvouched == [41]
    assert verify_log(str(path), key=KEY).ok


def test_repair_quarantines_a_forged_suffix_from_the_last_head_it_agrees_with(tmp_path):
    # The head anchor disagrees with the forged end; where the forgery starts nobody
    # can tell, so repair keeps what a past head (recorded at powers of two, then every HISTORY_EVERY seqs)
    # vouches for, quarantines the rest and names every event it did not keep.
    path = tmp_path / "events.jsonl"
    make_log(path, 1200, batch=50)
    history = HeadAnchor(str(path)).read_all()[1]
    assert [h.seq for h in history] == [50, 100, 150, 300, 550, 1050]  # past powers of two, then of 1024
    write_lines(path, forge_suffix(lines_of(path), 1150))
    report = repair_log(str(path), quest_id="q", key=KEY)
    assert [u.seq for u in report.unvouched] == list(range(1051, 1201))
    assert b'"forged m' not in path.read_bytes()
    assert b'"forged m1150' in (path.parent / report.quarantine_path).read_bytes()
    with EventLog(path, key=KEY) as log:
        assert log.last_seq == 1051 and log.get(1050).content == "m1049"
    assert verify_log(str(path), key=KEY).ok


def test_repair_keeps_a_log_whose_lines_are_all_vouched_for(path):
    lines = lines_of(path)
    lines[10], lines[11] = lines[11], lines[10]  # moved, not edited: the chain vouches
    lines.insert(5, b"garbage")
    write_lines(path, lines)
    report = repair_log(str(path), quest_id="q", key=KEY)
    assert report.unvouched == [] and [p.line for p in report.removed] == [6]
    with EventLog(path, key=KEY) as log:
        assert [getattr(e, "content", "") for e in log.read()][:100] == [f"m{i}" for i in range(100)]
    assert verify_log(str(path), key=KEY).ok


# -- the sparse index is checked ---------------------------------------------------------


def test_a_bad_middle_index_entry_is_caught_at_use_and_by_verify(tmp_path):
    path = tmp_path / "events.jsonl"
    make_log(path, 300, batch=50)
    idx = str(path) + ".idx"
    entries = list(struct.unpack(f"<{os.path.getsize(idx) // 8}Q", Path(idx).read_bytes()))
    entries[2] = entries[3]  # seq 129's entry points at seq 193's line
    Path(idx).write_bytes(struct.pack(f"<{len(entries)}Q", *entries))
    with EventLog(path, quest_id="q", key=KEY) as log:
        assert [e.seq for e in log.read(after_seq=140, limit=3)] == [141, 142, 143]
    report = verify_log(str(path), key=KEY)
    assert [p.anchor for p in report.problems] == ["index events.jsonl.idx"]
    assert "index entry 2" in report.problems[0].reason
    repaired = repair_log(str(path), quest_id="q", key=KEY)
    assert repaired.index_rebuilt and not repaired.changed
    assert verify_log(str(path), key=KEY).ok


# -- the audit, re-run ---------------------------------------------------------------------


@pytest.mark.slow
def test_random_tampering_is_detected_every_time(tmp_path, capsys):
    rng = random.Random(11)
    base = tmp_path / "base"
    base.mkdir()
    make_log(base / "events.jsonl", 600, batch=7)
    original = lines_of(base / "events.jsonl")
    work = tmp_path / "work"
    counts: dict[str, list[int]] = {}

    def trial(kind: str, lines: list[bytes], rewrite_anchor: bool = False) -> None:
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(base, work)
        path = work / "events.jsonl"
        write_lines(path, lines)
        if rewrite_anchor and lines:  # the forger also "fixes" the head anchor, without our key
            HeadAnchor(str(path), os.urandom(32)).reset(decode_line(lines[-1]).seq, line_hash(lines[-1]))
        detected = not verify_log(str(path), key=KEY).ok
        counts.setdefault(kind, [0, 0])
        counts[kind][0] += detected
        counts[kind][1] += 1

    for _ in range(40):  # the last line edited (a value changed, still valid JSON)
        lines = list(original)
        lines[-1] = lines[-1].replace(b'"m599"', f'"m{rng.randint(0, 10**6)}"'.encode())
        trial("last line edited", lines, rewrite_anchor=rng.random() < 0.5)
    for k in range(1, 501):  # the last k lines deleted
        trial("last k lines deleted (k=1..500)", original[:-k], rewrite_anchor=k % 3 == 0)
    for _ in range(60):  # a suffix replaced by forged lines re-chained with the public hash
        start = rng.randint(1, 599)
        forged = forge_suffix(original, start)
        trial("forged re-chained suffix", forged[: rng.randint(start, 600)], rewrite_anchor=rng.random() < 0.5)
    for _ in range(100):  # a mid-file line edited, deleted or moved
        lines = list(original)
        i = rng.randint(0, 597)
        what = rng.choice(["edit", "delete", "swap"])
        if what == "edit":
            lines[i] = lines[i].replace(b'"m', b'"M', 1)
        elif what == "delete":
            del lines[i]
        else:
            lines[i], lines[i + 2] = lines[i + 2], lines[i]
        trial("mid-file edit/delete/move", lines)
    total = sum(t for _d, t in counts.values())
    detected = sum(d for d, _t in counts.values())
    with capsys.disabled():
        print(f"\n[tamper audit] 600-event log, head anchor with MAC: {detected}/{total} detected")
        for kind, (d, t) in counts.items():
            print(f"  {kind}: {d}/{t}")
    assert detected == total, counts


def test_load_key_creates_a_private_key_once(tmp_path):
    key = load_key(tmp_path)
    assert len(key) == 32 and load_key(tmp_path) == key
    assert oct(os.stat(tmp_path / ".ds" / "log.key").st_mode & 0o777) == "0o600"


def test_an_appender_that_refuses_a_damaged_log_cuts_nothing_even_a_torn_tail(path):
    lines = lines_of(path)
    HeadAnchor(str(path), b"f" * 32).reset(100, line_hash(lines[-1]))  # signed elsewhere
    with open(path, "ab") as f:
        f.write(b'{"type":"conversation.message","seq":101,"id":"half')
    before = path.read_bytes()
    with EventLog(path, quest_id="q", key=KEY) as log:
        assert log.recovered is None and log.torn is not None
        assert log.last_seq == 100
        with pytest.raises(LogError, match="MAC does not match"):
            log.append(msg(1))
    assert path.read_bytes() == before


def test_repair_doubts_only_between_the_anchors_around_a_disagreement(path):
    # Past heads at 16, 32 and 64; the line of seq 32 is edited. Lines 17-31 may have
    # been re-chained by the same hand (nothing before 32 can prove otherwise), so they
    # go too; the head at 64 vouches back through the chain for 33-63, and the line
    # before 17 and after 64 are outside the doubt.
    history = [h.seq for h in HeadAnchor(str(path)).read_all()[1]]
    assert {16, 32, 64} <= set(history)
    lines = lines_of(path)
    lines[31] = lines[31].replace(b'"m31"', b'"m31 (edited)"')
    write_lines(path, lines)
    report = verify_log(str(path), key=KEY)
    caught = [p.anchor for p in report.problems if p.anchor and not p.anchor.startswith("index")]  # (entries moved too)
    assert caught == ["head anchor events.jsonl.head (past head 32)"]
    repaired = repair_log(str(path), quest_id="q", key=KEY)
    assert [u.seq for u in repaired.unvouched] == list(range(17, 33))
    assert verify_log(str(path), key=KEY).ok
