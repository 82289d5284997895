"""The head anchor cannot be rolled back (issue 22 part 3).

Whoever can write a quest can cut its log back to an earlier head's seq and put that
head's signed record back into the head slot, cut the anchor's history with it, or put
back a copy of the quest taken earlier. Every such rollback is reported by ``ds
verify`` (naming the seq the anchor held and the seq the log ends at) and refused by
appenders; normal appends, recovery, repair, several processes and the format-1 files
of older homes keep working.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ds_events.errors import LogError
from ds_events.events import ConversationMessage, LogRepaired
from ds_events.log import EventLog, anchor as anchor_module, line_hash
from ds_events.log.anchor import HeadAnchor, head_mac
from ds_events.verify import repair_log, verify_log
from tests.helpers import DS, ds_env

KEY = b"k" * 32
RECORD = anchor_module._RECORD  # bytes of one anchor record (the same in both formats)
FIXTURE_V1 = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "head_v1"
N = 400  # enough for past heads at 1, 2, 4 ... 256


def msg(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}")


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def records(head_file: Path) -> list[bytes]:
    data = head_file.read_bytes()
    return [data[i : i + RECORD] for i in range(0, len(data) - RECORD + 1, RECORD)]


def rolled_back_to(tmp: Path, src: Path, j: int, variant: str) -> int:
    """Copy the log at ``src`` into ``tmp`` cut back to its ``j``-th past head, as a
    forger without the key would: the log truncated at that head's seq (and its index
    dropped, a cache that would give it away), the past head's record put into the head
    slot, and per ``variant`` the history kept, or cut after it, and the record
    relabelled to look like a head. Returns the seq it was cut back to."""
    recs = records(Path(f"{src}.head"))
    past = json.loads(recs[j])
    seq = past["seq"]
    path = tmp / "events.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines_of(src)[:seq]))
    slot = recs[j]
    if variant in ("relabelled", "as-format-1"):
        forged = {k: v for k, v in past.items() if k in ("seq", "hash", "mac")}
        if variant == "relabelled":
            forged.update(v=2, kind="head", n=j - 1)
        data = json.dumps(forged, separators=(",", ":")).encode()
        slot = data + b" " * (RECORD - 1 - len(data)) + b"\n"
    history = recs[1:] if variant == "history-kept" else recs[1 : j + 1]
    Path(f"{path}.head").write_bytes(slot + b"".join(history))
    return seq


@pytest.fixture(scope="module")
def signed_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("signed") / "events.jsonl"
    with EventLog(path, quest_id="q", actor="t", policy="group", key=KEY) as log:
        for i in range(N):
            log.append(msg(i))
    return path


# -- a cut back to any earlier signed head ---------------------------------------------


@pytest.mark.parametrize("variant", ["history-kept", "history-cut", "relabelled", "as-format-1"])
def test_a_cut_back_to_every_earlier_signed_head_is_detected(signed_log, tmp_path, variant):
    past = records(Path(f"{signed_log}.head"))[1:]
    assert [json.loads(r)["seq"] for r in past] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    missed = []
    for j in range(1, len(past) + 1):
        case = tmp_path / f"cut{j}"
        case.mkdir()
        seq = rolled_back_to(case, signed_log, j, variant)
        report = verify_log(str(case / "events.jsonl"), key=KEY)
        if report.ok:
            missed.append(seq)
            continue
        reasons = [p.reason for p in report.problems]
        rollback = [r for r in reasons if r.startswith("rollback:")]
        assert rollback == [
            f"rollback: the log ends at seq {seq} and the head slot of the head anchor events.jsonl.head holds a copy "
            f"of its past head of seq {seq}, not a head record: the log and its anchor were cut back to an earlier head"
        ], reasons
        with EventLog(case / "events.jsonl", quest_id="q", key=KEY) as log:  # an appender refuses it too
            with pytest.raises(LogError, match=f"past head of seq {seq}.*rolled back"):
                log.append(msg(0))
        assert len(lines_of(case / "events.jsonl")) == seq  # and wrote nothing
    assert missed == [], f"rollbacks to seqs {missed} went undetected"


def test_verify_through_the_cli_names_a_rollback_and_the_home_witness_the_head_it_knew(home, tmp_path):
    with home.create_quest("Rollback", quest_id="rb") as quest:
        for i in range(69):
            quest.emit(msg(i))
    root = home.quest_root("rb")
    log = root / ".ds" / "events.jsonl"
    assert [json.loads(r)["seq"] for r in records(Path(f"{log}.head"))[1:]] == [1, 2, 4, 8, 16, 32, 64]
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in ("events.jsonl", "events.jsonl.head"):
        shutil.copy(root / ".ds" / name, saved / name)
    seq = rolled_back_to(root / ".ds", saved / "events.jsonl", 6, "history-cut")  # back to seq 32
    (root / ".ds" / "events.jsonl.idx").unlink()
    env = ds_env(home)
    done = subprocess.run([sys.executable, "-m", "ds_events", "verify", "rb"], env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"rollback: the log ends at seq {seq} and the head slot of the head anchor events.jsonl.head holds a copy" in done.stdout
    assert (
        f"the log ends at seq {seq} but the head witness .ds/heads/rb.head (in the home) names seq 70: lines were "
        "removed from its end" in done.stdout
    )
    done = subprocess.run([*DS, "message", "rb", "hello"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "rolled back" in done.stderr and len(lines_of(log)) == seq


def test_cutting_the_anchor_history_alone_is_detected(signed_log, tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copy(signed_log, path)
    recs = records(Path(f"{signed_log}.head"))
    Path(f"{path}.head").write_bytes(b"".join(recs[:5]))  # the head and its first 4 past heads
    report = verify_log(str(path), key=KEY)
    assert [p.reason for p in report.problems] == [
        f"head anchor events.jsonl.head: its head (seq {N}) follows 9 past heads but the file holds 4: past-head "
        "records were cut from it (the anchor was rolled back)"
    ]


def test_a_past_head_removed_from_the_middle_of_the_history_breaks_the_chain(signed_log, tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copy(signed_log, path)
    recs = records(Path(f"{signed_log}.head"))
    Path(f"{path}.head").write_bytes(b"".join(recs[:4] + recs[5:]))  # past head 8 gone
    reasons = [p.reason for p in verify_log(str(path), key=KEY).problems]
    assert any("(past head 16) is not record 4 of the file's chain" in r for r in reasons), reasons


# -- an old copy put back: the witness in the home ---------------------------------------


def test_a_quest_restored_from_an_old_copy_is_caught_by_the_home_witness_and_repair_accepts_it(home, tmp_path, capsys):
    from tests.cli.test_cli_log import run

    with home.create_quest("Restore", quest_id="rs") as quest:
        for i in range(20):
            quest.emit(msg(i))
    root = home.quest_root("rs")
    copy = tmp_path / "rs-copy"
    shutil.copytree(root, copy)  # the whole quest directory, .git and .ds included
    with home.open_quest("rs") as quest:
        for i in range(20, 30):
            quest.emit(msg(i))
        head = quest.log.last_seq
    shutil.rmtree(root)
    shutil.copytree(copy, root)
    code, out, _ = run(capsys, "verify", "rs")
    assert code == 1
    assert f"the log ends at seq 21 but the head witness .ds/heads/rs.head (in the home) names seq {head}" in out
    code, out, err = run(capsys, "message", "rs", "hello")
    assert code == 1 and f"head witness .ds/heads/rs.head (in the home) names seq {head}" in err
    code, out, _ = run(capsys, "repair", "rs", "--yes")
    assert code == 0 and f"reset the head anchor: the head witness .ds/heads/rs.head (in the home) named seq {head}" in out
    with home.open_quest("rs", read_only=True) as quest:
        repaired = quest.log.tail(1)[0]
    assert isinstance(repaired, LogRepaired) and repaired.seq == 22 and repaired.removed_lines == []
    assert repaired.reasons == [
        f"the head witness .ds/heads/rs.head (in the home) named seq {head}, but the log ends at seq 21: seqs after 21 are lost"
    ]
    code, out, _ = run(capsys, "verify", "rs")
    assert code == 0, out
    code, _, err = run(capsys, "message", "rs", "hello again")
    assert code == 0, err


def test_a_deleted_head_anchor_with_a_cut_log_is_caught_by_the_witness(tmp_path):
    path, witness = tmp_path / "events.jsonl", tmp_path / "home" / "heads" / "q.head"
    with EventLog(path, quest_id="q", key=KEY, witness=witness) as log:
        for i in range(10):
            log.append(msg(i))
    os.remove(f"{path}.head")
    assert [p.reason for p in verify_log(str(path), key=KEY, witness=witness).problems] == [
        "the head anchor (events.jsonl.head) is missing: the end of the log cannot be checked"
    ]
    path.write_bytes(b"".join(line + b"\n" for line in lines_of(path)[:7]))
    reasons = [p.reason for p in verify_log(str(path), key=KEY, witness=witness).problems]
    assert any("the log ends at seq 7 but the head witness" in r and "names seq 10" in r for r in reasons), reasons


def test_a_forged_witness_is_refused(tmp_path):
    path, witness = tmp_path / "events.jsonl", tmp_path / "heads" / "q.head"
    with EventLog(path, quest_id="q", key=KEY, witness=witness) as log:
        log.append(msg(0))
    HeadAnchor(str(tmp_path / "other.jsonl"), b"f" * 32, witness=str(witness)).reset(1, line_hash(lines_of(path)[0]))
    reasons = [p.reason for p in verify_log(str(path), key=KEY, witness=witness).problems]
    assert any("head witness" in r and "does not check with this home's key" in r for r in reasons), reasons
    with EventLog(path, quest_id="q", key=KEY, witness=witness) as log:
        with pytest.raises(LogError, match="does not check"):
            log.append(msg(1))


def test_a_quest_made_again_after_its_directory_was_deleted_starts_a_new_witness(home):
    with home.create_quest("Again", quest_id="ag") as quest:
        for i in range(5):
            quest.emit(msg(i))
    shutil.rmtree(home.quest_root("ag"))
    with home.create_quest("Again", quest_id="ag") as quest:
        quest.emit(msg(0))
        assert quest.log.last_seq == 2
    from ds_events.verify import verify_home_log

    assert verify_home_log(home, "ag").ok


def test_verify_says_so_when_the_home_lost_its_key_but_the_anchor_is_signed(home):
    from ds_events.verify import verify_home_log

    with home.create_quest("Keyless", quest_id="kl") as quest:
        quest.emit(msg(0))
    os.remove(home.root / ".ds" / "log.key")
    reasons = [p.reason for p in verify_home_log(home, "kl").problems]
    assert any("this home has no log key" in r for r in reasons), reasons


# -- what keeps working ---------------------------------------------------------------


def test_a_format_1_anchor_keeps_verifying_and_the_next_head_re_signs_it_as_a_chain(tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copy(FIXTURE_V1 / "events.jsonl", path)
    shutil.copy(FIXTURE_V1 / "events.jsonl.head", f"{path}.head")
    old = records(Path(f"{path}.head"))
    assert all(b'"v"' not in r for r in old)  # format 1: seq, hash and mac only
    head = json.loads(old[0])
    assert head["mac"] == head_mac(KEY, 300, head["hash"])
    report = verify_log(str(path), key=KEY)
    assert report.ok, report.problems
    with EventLog(path, quest_id="v1", key=KEY, read_only=True) as log:
        assert log.last_seq == 300
    assert records(Path(f"{path}.head")) == old  # a reader changes nothing
    with EventLog(path, quest_id="v1", actor="t", key=KEY) as log:
        log.append(msg(300))
    new = records(Path(f"{path}.head"))
    assert [json.loads(r)["seq"] for r in new] == [301, 1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert all(json.loads(r)["v"] == 2 for r in new)
    assert verify_log(str(path), key=KEY).ok
    # The former format-1 past heads cannot pass for a head any more.
    case = tmp_path / "cut"
    case.mkdir()
    seq = rolled_back_to(case, path, 9, "history-cut")
    assert any(p.reason.startswith(f"rollback: the log ends at seq {seq}") for p in verify_log(str(case / "events.jsonl"), key=KEY).problems)


def test_a_format_1_past_head_that_does_not_check_is_not_re_signed(tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copy(FIXTURE_V1 / "events.jsonl", path)
    recs = records(FIXTURE_V1 / "events.jsonl.head")
    recs[3] = recs[3].replace(b'"seq":4,', b'"seq":5,')  # an edited past head
    Path(f"{path}.head").write_bytes(b"".join(recs))
    with EventLog(path, quest_id="v1", actor="t", key=KEY) as log:
        log.append(msg(300))
    assert records(Path(f"{path}.head")) == recs  # left for verify to show, not laundered
    reasons = [p.reason for p in verify_log(str(path), key=KEY).problems]
    assert reasons == [
        "head anchor events.jsonl.head (past head 5): its MAC does not match this home's key (the anchor was edited, "
        "or signed elsewhere)"
    ]


@pytest.mark.parametrize("policy", ["always", "group", "never"])
def test_appends_recovery_and_reopening_keep_the_head_and_witness_in_step(tmp_path, policy):
    path, witness = tmp_path / "events.jsonl", tmp_path / "heads" / "q.head"
    for _round in range(3):
        with EventLog(path, quest_id="q", actor="t", policy=policy, key=KEY, witness=witness) as log:
            for i in range(70):
                log.append(msg(i))
            log.append([msg(i) for i in range(5)])
        with open(path, "ab") as f:  # a crashed writer's fragment: recovered by the next open
            f.write(b'{"type":"conversation.message","seq":9999,"id":"torn')
    with EventLog(path, quest_id="q", key=KEY, witness=witness) as log:
        assert log.recovered is not None
        last = log.last_seq
    anchor = HeadAnchor(str(path), KEY, witness=str(witness)).check()
    assert anchor.problems == [] and anchor.head is not None and anchor.witness is not None
    assert anchor.head.seq == anchor.witness.seq == last
    assert verify_log(str(path), key=KEY, witness=witness).ok


def test_repair_of_a_rolled_back_anchor_resets_it_and_appends_go_on(signed_log, tmp_path):
    seq = rolled_back_to(tmp_path, signed_log, 9, "history-cut")
    path = tmp_path / "events.jsonl"
    report = repair_log(str(path), quest_id="q", key=KEY)
    assert report.unvouched == [] and report.event is not None and report.event.seq == seq + 1
    assert report.anchors_reset == [
        f"rollback: the head slot of the head anchor events.jsonl.head held a copy of its past head of seq {seq}"
    ]
    assert verify_log(str(path), key=KEY).ok
    with EventLog(path, quest_id="q", key=KEY) as log:
        assert log.append(msg(0)).seq == seq + 2
    assert verify_log(str(path), key=KEY).ok


_WRITER = """
import sys
from ds_events.events import ConversationMessage
from ds_events.log import EventLog
path, witness, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with EventLog(path, quest_id="q", actor=name, policy="group", key=b"k" * 32, witness=witness) as log:
    for i in range(count):
        log.append(ConversationMessage(role="user", content=f"{name}-{i}"))
"""


@pytest.mark.slow
def test_concurrent_appenders_in_several_processes_leave_one_chain_and_the_last_head(tmp_path):
    path, witness = tmp_path / "events.jsonl", tmp_path / "heads" / "q.head"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(witness), f"w{k}", "300"], env=os.environ.copy())
        for k in range(3)
    ]
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    anchor = HeadAnchor(str(path), KEY, witness=str(witness)).check()
    assert anchor.problems == []
    assert anchor.head is not None and anchor.head.seq == 900  # the head never went back to an older one
    assert anchor.witness is not None and anchor.witness.seq == 900
    # One past head per stretch of the log it entered (a head recorded after a sync that
    # covered several seqs may skip a stretch), in order, chained: no duplicates.
    eras = [anchor_module._era(p.seq, anchor_module.HISTORY_EVERY) for p in anchor.past]
    assert eras == sorted(set(eras)) and len(eras) >= 5
    assert verify_log(str(path), key=KEY, witness=witness).ok
