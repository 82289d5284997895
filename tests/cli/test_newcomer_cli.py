"""What a newcomer found on the CLI (issue 24, part 8), each through the real ``ds``
process: ``ds message`` says what became of the message (and who sent it is the user),
``ds verify --registry`` agrees with ``ds repair --registry`` on a fresh home, search
scores read as something other than ``0.000``, and ``ds demo`` keeps its home where it
was told (``ds --home DIR demo``, a relative DIR too)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ds_events.home import Home
from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.commands import SearchCards, WriteCard
from ds_events.stores import REGISTRY_LOG
from tests.helpers import DS, ds_env


def ds(home: Home, *args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DS, *args], env=ds_env(home), capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _events(home: Home, quest_id: str, type_: str) -> list[dict[str, object]]:
    path = home.quest_root(quest_id) / ".ds" / "events.jsonl"
    return [e for e in (json.loads(line) for line in path.read_text().splitlines()) if e["type"] == type_]


def test_ds_message_says_it_queued_the_message_for_a_turn_and_records_the_user(home: Home) -> None:
    assert ds(home, "quest", "new", "--title", "Messages", "--id", "mq").returncode == 0
    done = ds(home, "message", "mq", "Try a smaller vocabulary first")
    assert done.returncode == 0, done.stderr
    (message,) = _events(home, "mq", "conversation.message")
    first, then = done.stdout.splitlines()
    assert first == f"queued message {message['id']} (seq {message['seq']}) for quest mq"
    assert then == "the next turn reads it (`ds run mq`, or a running `ds serve`)"
    assert message["actor"] == "user:cli" and message["source"] == "cli"

    assert ds(home, "control", "mq", "pause").returncode == 0
    paused = ds(home, "message", "mq", "And then the sweep")
    assert paused.returncode == 0, paused.stderr
    assert paused.stdout.splitlines()[1] == "the quest is paused: no turn picks it up until `ds control mq resume`"
    as_json = json.loads(ds(home, "message", "mq", "third", "--json").stdout)
    last = _events(home, "mq", "conversation.message")[-1]
    assert as_json == {"seq": last["seq"], "id": last["id"], "quest_id": "mq", "status": "paused"}


def test_verify_and_repair_of_the_registry_agree_on_a_fresh_home(home: Home) -> None:
    verified = ds(home, "verify", "--registry")
    repaired = ds(home, "repair", "--registry")
    assert (verified.returncode, repaired.returncode) == (0, 0), verified.stdout + verified.stderr
    assert verified.stdout.startswith("ok: no baseline registry in ") and "nothing was published" in verified.stdout
    assert "nothing to repair" in repaired.stdout
    as_json = json.loads(ds(home, "verify", "--registry", "--json").stdout)
    assert as_json["ok"] is True and as_json["problems"] == [] and as_json["unregistered"] == []
    assert not home.has_log(REGISTRY_LOG) and not (home.root / "baselines").exists()  # verify wrote nothing


def test_memory_search_scores_read_as_more_than_zeros(home: Home) -> None:
    with home.create_quest("Memory", quest_id="memq") as quest:
        mem = MemoryContext(quest=quest, actor="test")
        titles = ["Label smoothing helps small ResNets", "Warmup stops early divergence", "Label noise hurts calibration"]
        for title in titles:
            memory_service.write(mem, WriteCard(kind="knowledge", title=title, body=f"{title}. Seen on CIFAR-10 with label smoothing."))
        raw = memory_service.search(mem, SearchCards(query="label smoothing", limit=5)).results
        mem.close()
    assert raw and max(r.score for r in raw) < 0.0005  # what made "0.000": BM25 scores this small
    done = ds(home, "memory", "search", "memq", "label smoothing")
    assert done.returncode == 0, done.stderr
    hits = [line for line in done.stdout.splitlines() if re.match(r"\s*\d+% ", line)]  # a hit's line, then its snippet
    assert len(hits) == len(raw)
    assert not any(line.lstrip().startswith("0.000") for line in hits), done.stdout
    relative = [int(re.match(r"\s*(\d+)%", line).group(1)) for line in hits]  # type: ignore[union-attr]
    assert relative[0] == 100 and relative == sorted(relative, reverse=True), done.stdout
    assert f"{raw[0].score:.3g}" in hits[0]  # the raw score too, with its digits


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--home", "demo-home", "demo"], ["demo", "--home", "demo-home"]], ids=["ds-home-demo", "demo-home"])
def test_ds_demo_keeps_its_home_in_the_home_it_was_given_relative_too(tmp_path: Path, argv: list[str]) -> None:
    # `ds --home DIR demo` (the form its hints print) made a temporary home instead;
    # `ds demo --home DIR` with DIR relative sent the agent's MCP servers, which run in
    # the quest's directory, to a home relative to that (every turn after the first failed).
    work = tmp_path / "work"
    work.mkdir()
    elsewhere = Home(tmp_path / "env-home")  # DS_HOME of the environment: not where the demo goes
    done = ds(elsewhere, *argv, cwd=work, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    home = Home(work / "demo-home")
    (quest_id,) = home.quest_ids()
    assert f"home:    {home.root.resolve()}" in done.stdout
    assert "6 turns (6 completed)" in done.stdout, done.stdout  # the agent's MCP servers found the home
    assert sorted(p.name for p in work.iterdir()) == ["demo-home"]  # nothing written beside it
    assert not elsewhere.root.exists()
    assert "verify:  ok" in done.stdout and quest_id in done.stdout
