"""config.yaml as one typed value: defaults, every bad value refused as ``bad_config``
naming the key and the file (and nothing written by the command that read it), unknown
keys refused, edits seen without reopening, and ``log.max_event_bytes`` in force."""

from __future__ import annotations

import os

import msgspec
import pytest
import yaml

from ds_events.config import Config
from ds_events.errors import Invalid, ServiceError
from ds_events.home import DEFAULT_CONFIG, Home, Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git_service, commands as cmd

BAD = [
    ("git:\n  max_file_bytes: lots\n", "git.max_file_bytes"),
    ("git:\n  max_file_bytes: -1\n", "git.max_file_bytes"),
    ("durability: sometimes\n", "durability"),
    ("log:\n  max_event_bytes: 0\n", "log.max_event_bytes"),
    ("bash_exec:\n  kill_grace_seconds: -1\n", "bash_exec.kill_grace_seconds"),
    ("bash_exec:\n  progress_interval_seconds: soon\n", "bash_exec.progress_interval_seconds"),
    ("memory:\n  shared_across_quests: [yes]\n", "memory.shared_across_quests"),
    ("connectors:\n  webhook:\n    max_attempts: 0\n", "connectors.webhook.max_attempts"),
    ("arxiv:\n  api_url: 7\n", "arxiv.api_url"),
    ("serve:\n  port: 70000\n", "serve.port"),
    ("serve:\n  hots: 0.0.0.0\n", "serve.hots"),
    ("git:\n  max_file_byte: 1000\n", "git.max_file_byte"),  # a misspelled key
    ("gti:\n  max_file_bytes: 1000\n", "gti"),  # a misspelled section
    ("store: mysql://db/ds\n", "store"),  # neither file nor a PostgreSQL URL
]


def test_a_home_without_config_yaml_has_every_default_and_ds_init_writes_a_subset_of_them(home: Home) -> None:
    written = home.config()
    assert msgspec.to_builtins(written) == msgspec.to_builtins(Config())  # what init wrote changes no default
    home.config_path.unlink()
    assert home.config() == Config()
    assert msgspec.convert(DEFAULT_CONFIG, Config).git.max_file_bytes == Config().git.max_file_bytes


@pytest.mark.parametrize("text, key", BAD, ids=[key for _, key in BAD])
def test_a_bad_value_is_bad_config_naming_the_key_and_file_and_a_checkpoint_writes_nothing(
    home: Home, quest: Quest, text: str, key: str
) -> None:
    (quest.root / "train.py").write_text("print('train')\n")
    head, seq = str(quest.repo().head.target), quest.log.last_seq
    home.config_path.write_text(text)
    with pytest.raises(Invalid) as caught:
        home.config()
    err = caught.value
    assert err.code == "bad_config" and err.details["key"] == key and err.details["file"] == str(home.config_path)
    assert key in err.message and str(home.config_path) in err.message
    with pytest.raises(Invalid) as again:
        git_service.checkpoint(quest, cmd.Checkpoint(message="train"))
    assert again.value.code == "bad_config"
    assert quest.log.last_seq == seq and str(quest.repo().head.target) == head
    with pytest.raises(Invalid, match=key):  # and no quest opens on it
        home.open_quest("q1").close()


def test_unparsable_yaml_and_a_file_that_is_not_a_mapping_are_bad_config(home: Home) -> None:
    for text in ("git: [\n", "- git\n"):
        home.config_path.write_text(text)
        with pytest.raises(Invalid) as caught:
            home.config()
        assert caught.value.code == "bad_config" and caught.value.details["file"] == str(home.config_path)


def test_a_null_section_or_key_means_its_defaults(home: Home) -> None:
    home.config_path.write_text("memory:\ngit:\n  max_file_bytes: null\narxiv:\n")
    assert home.config() == Config()


def test_an_edit_is_seen_by_an_open_home_and_a_fixed_file_works_again(home: Home) -> None:
    assert home.config().git.max_file_bytes == Config().git.max_file_bytes
    home.config_path.write_text("git:\n  max_file_bytes: 1234\n")
    assert home.config().git.max_file_bytes == 1234
    home.config_path.write_text("git:\n  max_file_bytes: lots\n")
    with pytest.raises(Invalid):
        home.config()
    home.config_path.write_text("git:\n  max_file_bytes: 4321\n")
    assert home.config().git.max_file_bytes == 4321


def test_git_max_file_bytes_from_config_leaves_bigger_files_out_of_a_checkpoint(home: Home, quest: Quest) -> None:
    home.config_path.write_text("git:\n  max_file_bytes: 100\n")
    (quest.root / "small.txt").write_text("x" * 100)
    (quest.root / "big.txt").write_text("x" * 101)
    r = git_service.checkpoint(quest, cmd.Checkpoint(message="sizes"))
    too_large = {s["path"] for s in r.skipped if s["reason"] == "too_large"}
    assert "big.txt" in too_large and "small.txt" not in too_large


def test_log_max_event_bytes_from_config_refuses_an_oversized_event_and_writes_nothing(home: Home) -> None:
    cfg = yaml.safe_load(home.config_path.read_text())
    cfg["log"] = {"max_event_bytes": 4000}
    home.config_path.write_text(yaml.safe_dump(cfg))
    quest = home.create_quest("small events", quest_id="small")
    try:
        seq, size = quest.log.last_seq, os.path.getsize(quest.log.path)
        with pytest.raises(ServiceError) as caught:
            artifacts.record(quest, cmd.Record(payload={"kind": "idea", "title": "big", "summary": "x" * 5000}))
        assert caught.value.code == "event_too_large"
        assert quest.log.last_seq == seq and os.path.getsize(quest.log.path) == size
        assert not (quest.root / "artifacts/ideas").exists()
        small = artifacts.record(quest, cmd.Record(payload={"kind": "idea", "title": "small", "summary": "x" * 100}))
        assert small.seq == seq + 1
    finally:
        quest.close()
