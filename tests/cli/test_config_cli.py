"""``ds config show | get | set | validate`` through the real CLI (``python3 -m
ds_events``): the effective config with every default, one key read, one key written
with exactly the loader's validation — a refusal writes nothing (the file's bytes are
compared) — and comments kept where the edit can keep them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from ds_events.config import Config, parse_config
from ds_events.config_edit import effective
from ds_events.errors import Invalid
from ds_events.home import Home
from tests.helpers import DS, ds_env

COMMENTED = """\
# my settings
durability: group   # the default, said aloud
runner:
  max_attempts: 3   # three tries
  commands: {codex: [/opt/node/bin/codex]}
  # a comment inside runner
serve:
  port: 8765
# the end
"""


def ds(home: Home, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DS, *argv], env=ds_env(home), capture_output=True, text=True, timeout=120)


def loader_message(text: str, path: Path) -> str:
    with pytest.raises(Invalid) as refused:
        parse_config(text, path)
    assert refused.value.code == "bad_config"
    return refused.value.message


def test_show_prints_every_key_with_its_default_as_yaml_and_json(home: Home) -> None:
    shown = ds(home, "config", "show")
    assert shown.returncode == 0, shown.stderr
    assert yaml.safe_load(shown.stdout) == effective(Config())
    as_json = ds(home, "config", "show", "--json")
    assert json.loads(as_json.stdout) == effective(Config())
    # omit_defaults sections are filled too, and an unset optional section is null
    assert json.loads(as_json.stdout)["connectors"]["webhook"] == {"max_attempts": 3, "backoff_seconds": 1.0,
                                                                   "timeout_seconds": 10.0, "token_env": None}  # fmt: skip
    assert json.loads(as_json.stdout)["runner"]["codex_provider"] is None


def test_get_reads_the_effective_value_of_a_dotted_key(home: Home) -> None:
    home.config_path.write_text(COMMENTED)
    assert ds(home, "config", "get", "runner.max_attempts").stdout == "3\n"
    assert ds(home, "config", "get", "runner.stall_seconds").stdout == "900.0\n"  # a default
    assert json.loads(ds(home, "config", "get", "runner.commands.codex").stdout) == ["/opt/node/bin/codex"]
    assert json.loads(ds(home, "config", "get", "runner.commands.claude").stdout) is None
    assert json.loads(ds(home, "config", "get", "serve", "--json").stdout) == {"host": "127.0.0.1", "port": 8765, "token": None}


@pytest.mark.parametrize("key", ["runner.max_attempt", "runnr", "runner.max_attempts.deeper", "runner.commands.codex.x"])
def test_get_of_an_unknown_key_is_bad_config_in_the_loaders_words(home: Home, key: str) -> None:
    got = ds(home, "config", "get", key)
    assert got.returncode == 1 and got.stdout == ""
    assert got.stderr.startswith("error: bad_config: ") and "unknown key" in got.stderr, got.stderr
    if key == "runner.max_attempt":  # the file with that key: the loader says the same
        document = yaml.safe_dump({"runner": {"max_attempt": 3}})
        assert got.stderr.strip() == f"error: bad_config: {loader_message(document, home.config_path)}"


def test_set_changes_one_value_and_keeps_every_other_byte(home: Home) -> None:
    home.config_path.write_text(COMMENTED)
    done = ds(home, "config", "set", "runner.max_attempts", "5", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"key": "runner.max_attempts", "value": 5, "file": str(home.config_path), "comments_kept": True}
    assert home.config_path.read_text() == COMMENTED.replace("max_attempts: 3", "max_attempts: 5")
    assert home.config().runner.max_attempts == 5


def test_set_of_a_new_key_adds_its_line_under_its_section_keeping_comments(home: Home) -> None:
    home.config_path.write_text(COMMENTED)
    assert ds(home, "config", "set", "runner.model", "gpt-5").returncode == 0
    assert ds(home, "config", "set", "runner.codex_provider.base_url", "http://127.0.0.1:8000/v1").returncode == 0
    assert ds(home, "config", "set", "log.connection_wait_seconds", "2.5").returncode == 0
    text = home.config_path.read_text()
    for line in COMMENTED.splitlines():
        assert line in text
    config = home.config()
    assert (config.runner.model, config.log.connection_wait_seconds) == ("gpt-5", 2.5)
    assert config.runner.codex_provider is not None and config.runner.codex_provider.base_url == "http://127.0.0.1:8000/v1"
    assert config.runner.commands == {"codex": ["/opt/node/bin/codex"]} and config.serve.port == 8765


def test_set_parses_the_value_as_yaml_and_null_restores_the_default(home: Home) -> None:
    assert ds(home, "config", "set", "runner.commands.acp", "[codex-acp, --verbose]").returncode == 0
    assert home.config().runner.commands == {"acp": ["codex-acp", "--verbose"]}
    assert ds(home, "config", "set", "memory.shared_across_quests", "true").returncode == 0
    assert home.config().memory.shared_across_quests is True
    assert ds(home, "config", "set", "memory.shared_across_quests", "null").returncode == 0
    assert home.config().memory.shared_across_quests is False


def test_set_that_must_rewrite_the_file_says_its_comments_were_not_kept(home: Home) -> None:
    home.config_path.write_text("# keep me?\nmemory:\n  config_guard_keys:\n  - lr\n")
    done = ds(home, "config", "set", "memory.config_guard_keys", "[lr, seed]")
    assert done.returncode == 0 and "its comments were not kept" in done.stdout, done.stdout
    assert home.config().memory.config_guard_keys == ("lr", "seed") and "# keep me?" not in home.config_path.read_text()


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("runner.max_attempts", "11", "runner.max_attempts must be an integer <= 10"),
        ("runner.max_attempts", "three", "runner.max_attempts must be an integer"),
        ("runner.max_attempt", "3", "unknown key 'runner.max_attempt'"),
        ("durability", "sometimes", "durability is 'sometimes'; use always, group or never"),
        ("store", "mysql://db", "store is 'mysql://db'"),
        ("runner.codex_provider.base_url", "ftp://x", "runner.codex_provider.base_url"),
        ("runner.name", "gemini", "use codex, claude, acp or scripted"),
        ("serve.port.inner", "1", "serve.port"),
        ("runner.model", "[unclosed", "not YAML"),
    ],
)
def test_set_refuses_what_the_loader_refuses_and_writes_nothing(home: Home, key: str, value: str, says: str) -> None:
    home.config_path.write_text(COMMENTED)
    before = home.config_path.read_bytes()
    listing = sorted(p.name for p in home.root.iterdir())
    done = ds(home, "config", "set", key, value)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert done.stderr.startswith("error: bad_config: ") and says in done.stderr, done.stderr
    assert home.config_path.read_bytes() == before
    assert sorted(p.name for p in home.root.iterdir()) == listing  # no temp file left either


def test_set_refuses_to_edit_a_file_the_loader_already_refuses(home: Home) -> None:
    home.config_path.write_text("durability: sometimes\n")
    before = home.config_path.read_bytes()
    done = ds(home, "config", "set", "runner.max_attempts", "2")
    assert done.returncode == 1 and "durability is 'sometimes'" in done.stderr
    assert home.config_path.read_bytes() == before


def test_set_in_a_home_without_a_config_creates_it(tmp_path: Path) -> None:
    home = Home(tmp_path / "fresh")
    assert ds(home, "config", "set", "runner.name", "scripted").returncode == 0
    assert home.config_path.read_text() == "runner:\n  name: scripted\n"


def test_validate_exits_0_on_a_valid_file_and_1_with_the_loaders_message(home: Home) -> None:
    home.config_path.write_text(COMMENTED)
    valid = ds(home, "config", "validate")
    assert (valid.returncode, valid.stdout) == (0, f"{home.config_path} is valid\n")
    for broken in ("runner:\n  max_attempts: 0\n", "runner: [\n", "prompt:\n  budgets:\n    memroy: 300\n"):
        home.config_path.write_text(broken)
        done = ds(home, "config", "validate")
        assert done.returncode == 1
        assert done.stderr.strip() == f"error: bad_config: {loader_message(broken, home.config_path)}"
        as_json = json.loads(ds(home, "config", "validate", "--json").stdout)
        assert (
            as_json["valid"] is False
            and as_json["error"] == "bad_config"
            and as_json["message"] == loader_message(broken, home.config_path)
        )
