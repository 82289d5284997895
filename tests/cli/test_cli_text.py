"""Text that is not Unicode on the command line (bytes that are not UTF-8 in an argument:
Python hands them on as lone surrogates) is one line and exit 1 with ``invalid_text``, and
nothing is written — as on every other edge. The log itself refuses such an event, so a
caller that skipped the edges' check cannot write a line that is not UTF-8 either."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ds_events.errors import ServiceError
from ds_events.events import ConversationMessage
from ds_events.home import Home
from ds_events.log import EventLog
from ds_events.verify import verify_log
from tests.helpers import ds_env

NOT_UTF8 = b"a\xed\xa0\x80b"  # an encoded surrogate: not valid UTF-8


def _ds(home: Home, *args: bytes | str) -> subprocess.CompletedProcess[bytes]:
    argv = [os.fsencode(sys.executable), b"-m", b"ds_events", *(os.fsencode(a) for a in args)]
    return subprocess.run(argv, env=ds_env(home), capture_output=True, timeout=120)


@pytest.mark.parametrize(
    "args",
    [("message", "q1", NOT_UTF8), ("control", "q1", "pause", "--reason", NOT_UTF8), ("quest", "new", "--title", NOT_UTF8, "--id", "q2")],
    ids=["message", "control-reason", "quest-title"],
)
def test_an_argument_that_is_not_utf8_is_invalid_text_and_writes_nothing(home: Home, args: tuple[bytes | str, ...]) -> None:
    with home.create_quest("Text", quest_id="q1") as quest:
        before = quest.log.last_seq
    done = _ds(home, *args)
    assert done.returncode == 1, done.stderr
    err = done.stderr.decode(errors="replace").strip().splitlines()
    assert len(err) == 1 and "invalid_text" in err[0], done.stderr
    assert "Traceback" not in done.stderr.decode(errors="replace")
    assert sorted(p.name for p in home.quests_dir.iterdir()) == ["q1"]
    with home.open_quest("q1", read_only=True) as quest:
        assert quest.log.last_seq == before


def test_the_log_refuses_an_event_that_is_not_text_and_stays_usable(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(str(path), quest_id="q", actor="t") as log:
        log.append(ConversationMessage(role="user", content="before"))
        size = path.stat().st_size
        with pytest.raises(ServiceError) as refused:
            log.append([ConversationMessage(role="user", content="fine"), ConversationMessage(role="user", content="a\ud800b")])
        assert refused.value.code == "invalid_text"
        assert path.stat().st_size == size and log.last_seq == 1  # the whole batch refused, nothing written
        assert log.append(ConversationMessage(role="user", content="after")).seq == 2
    assert verify_log(str(path)).ok
