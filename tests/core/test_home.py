"""The quest home: init, quest creation as a git repository, id validation, config."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.home import Home, Quest, validate_quest_id


def git(root, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def test_init_creates_the_layout_once(tmp_path):
    home = Home(tmp_path / "h")
    assert home.init() is True
    assert home.init() is False
    assert (home.root / "quests").is_dir() and (home.root / "memory").is_dir()
    assert yaml.safe_load(home.config_path.read_text())["durability"] == "group"


def test_a_new_quest_is_a_git_repository_on_main_with_its_files_committed(home):
    q = home.create_quest("Tokenizer ablations", quest_id="tok", brief="Try smaller vocabularies.")
    with q:
        assert git(q.root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
        tracked = set(git(q.root, "ls-files").split())
        assert {"quest.yaml", "brief.md", "plan.md", "status.md", "SUMMARY.md", ".gitignore"} <= tracked
        assert not any(t.startswith(".ds/") for t in tracked)
        git(q.root, "fsck", "--strict")
        assert "Try smaller vocabularies." in (q.root / "brief.md").read_text()
        assert yaml.safe_load((q.root / "quest.yaml").read_text())["title"] == "Tokenizer ablations"
        assert [e.type for e in q.log.read()] == ["quest.created"]


def test_quest_ids_are_generated_from_titles_including_non_ascii(home):
    a = home.create_quest("Überprüfung der Baseline!")
    b = home.create_quest("Überprüfung der Baseline!")
    c = home.create_quest("日本語だけ")
    for q in (a, b, c):
        q.close()
    assert a.id.startswith("uberprufung-der-baseline-") and a.id != b.id
    assert c.id.startswith("quest-")
    assert home.quest_ids() == sorted([a.id, b.id, c.id])


@pytest.mark.parametrize("bad", ["../evil", "a/b", "", "-lead", "UPPER", "x" * 65, "dot.dot", "sp ace", "/abs"])
def test_unsafe_quest_ids_are_refused_and_nothing_is_created(home, bad):
    with pytest.raises(Invalid, match="invalid quest id"):
        home.create_quest("t", quest_id=bad)
    assert list(home.quests_dir.iterdir()) == []
    assert not (home.root.parent / "evil").exists()


def test_an_existing_quest_is_never_clobbered(home):
    home.create_quest("one", quest_id="same").close()
    before = (home.quests_dir / "same" / ".ds" / "events.jsonl").read_bytes()
    with pytest.raises(Conflict, match="already exists"):
        home.create_quest("two", quest_id="same")
    assert (home.quests_dir / "same" / ".ds" / "events.jsonl").read_bytes() == before


@pytest.mark.parametrize("title", ["", "   ", "two\nlines", "x" * 201])
def test_bad_titles_are_refused(home, title):
    with pytest.raises(Invalid):
        home.create_quest(title, quest_id="t")
    assert not (home.quests_dir / "t").exists()


def test_opening_an_unknown_quest_says_how_to_find_one(home):
    with pytest.raises(NotFound, match="ds quest list"):
        home.open_quest("nope")


def test_a_quest_opens_by_its_root_as_runners_pass_it(home):
    home.create_quest("by root", quest_id="r1").close()
    with Quest.at(home.quests_dir / "r1") as q:
        assert q.id == "r1" and q.state("status").title == "by root"


def test_a_bad_durability_setting_is_refused(home):
    home.create_quest("x", quest_id="d").close()
    home.config_path.write_text("durability: sometimes\n")
    with pytest.raises(Invalid, match="always, group or never"):
        home.open_quest("d")


def test_default_home_comes_from_ds_home(monkeypatch, tmp_path):
    monkeypatch.setenv("DS_HOME", str(tmp_path / "x"))
    assert Home().root == tmp_path / "x"
    assert validate_quest_id("ok-1_2") == "ok-1_2"
