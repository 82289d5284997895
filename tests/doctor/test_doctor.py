"""``ds doctor`` through the real CLI (``python3 -m ds_events doctor``): every check of a
ready machine passes, and each way a runner breaks (its CLI missing, too old, its
provider not answering) fails with the fix; the MCP servers really start and list their
tools; nothing is left in the user's home or the temporary directory."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ds_events.doctor.limits import TESTED
from ds_events.home import Home
from tests.helpers import DS
from tests.stores import pg_url

from .world import ACP_AGENT, Endpoint, closed_port, doctor_env, endpoint, fake_cli, run_doctor_json, write_config

# Several real processes per run (three MCP servers, agent CLIs, an ACP agent): slow but
# for the first test, which keeps the doctor in the fast loop.
slow = pytest.mark.slow

EVERY_CHECK = {
    "config", "store", "disk", "git", "pygit2",
    "runner.codex.cli", "runner.codex.version", "runner.codex.provider",
    "runner.claude.cli", "runner.claude.version", "runner.claude.provider",
    "runner.acp.cli", "runner.acp.version", "runner.acp.provider",
    "mcp.memory", "mcp.artifact", "mcp.bash_exec",
}  # fmt: skip


@dataclass
class World:
    home: Home
    bindir: Path
    scratch_tmp: Path
    provider: Endpoint
    claude: Path

    def runner(self, **changes: Any) -> dict[str, Any]:
        """codex found on PATH, claude and the ACP agent through runner.commands, both
        providers on the loopback endpoint."""
        runner: dict[str, Any] = {
            "name": "codex",
            "commands": {"claude": [str(self.claude)], "acp": ACP_AGENT},
            "codex_provider": {"base_url": f"{self.provider.url}/v1"},
        }
        runner.update(changes)
        return runner

    def env(self, **extra: str) -> dict[str, str]:
        return doctor_env(self.home, self.bindir, self.scratch_tmp, **{"ANTHROPIC_BASE_URL": self.provider.url, **extra})


@pytest.fixture
def world(home: Home, tmp_path: Path) -> Iterator[World]:
    bindir = tmp_path / "bin"
    fake_cli(bindir, "codex", "codex-cli 0.169.0")
    claude = fake_cli(tmp_path / "elsewhere", "claude", "2.0.50 (Claude Code)")
    with endpoint() as provider:
        yield World(home=home, bindir=bindir, scratch_tmp=tmp_path / "tmp", provider=provider, claude=claude)


def test_a_ready_machine_passes_every_check_and_exits_0(world: World) -> None:
    write_config(world.home, world.runner())
    code, report, checks = run_doctor_json(world.env())
    failed = {n: c for n, c in checks.items() if c["status"] == "fail"}
    assert (code, report["ok"], failed) == (0, True, {})
    assert set(checks) == EVERY_CHECK
    assert {n: c["status"] for n, c in checks.items() if c["status"] != "ok"} == {"runner.acp.provider": "skip"}
    assert "0.169.0" in checks["runner.codex.version"]["detail"] and "2.0.50" in checks["runner.claude.version"]["detail"]
    assert "scripted-acp-agent" in checks["runner.acp.version"]["detail"]
    assert str(world.claude) in checks["runner.claude.cli"]["detail"]  # runner.commands honoured
    assert str(world.bindir / "codex") in checks["runner.codex.cli"]["detail"]  # else PATH
    # Both providers were really asked (a 401 is an answer: reachable).
    assert "HTTP 401" in checks["runner.codex.provider"]["detail"] and "HTTP 401" in checks["runner.claude.provider"]["detail"]
    assert sorted(line.split()[1] for line in world.provider.requests) == ["/", "/v1"]
    # The MCP servers listed their real tools.
    assert "write" in checks["mcp.memory"]["detail"] and "search" in checks["mcp.memory"]["detail"]
    assert "record" in checks["mcp.artifact"]["detail"]
    assert checks["mcp.bash_exec"]["detail"] == "1 tool: bash_exec"
    # The scratch quest lived in a temporary home, now gone; the user's home has no quest.
    assert world.home.quest_ids() == [] and list(world.home.quests_dir.iterdir()) == []
    assert list(world.scratch_tmp.iterdir()) == []


@slow
def test_a_missing_runner_cli_fails_with_the_install_or_the_setting_and_exits_1(world: World, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "codex"
    write_config(world.home, world.runner(commands={"codex": [str(missing)]}))
    done = subprocess.run([*DS, "doctor"], env=world.env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "runner.codex.cli" in line)
    assert lines[at].startswith("FAIL") and str(missing) in lines[at]
    assert lines[at + 1].strip() == "fix: npm install -g @openai/codex@0.169.0, or ds config set runner.commands.codex '[/path/to/codex]'"
    assert any(line.startswith("skip") and "runner.codex.version" in line for line in lines)
    assert lines[-1].endswith("fix the failures above") and "1 failed" in lines[-1]


@slow
@pytest.mark.parametrize(
    ("printed", "status", "code"),
    [("codex-cli 0.120.3", "fail", 1), ("codex-cli 0.170.1", "warn", 0), ("codex-cli (no version)", "fail", 1)],
    ids=["too-old", "newer-warns-only", "no-version"],
)
def test_a_runner_cli_outside_the_tested_range(world: World, printed: str, status: str, code: int) -> None:
    fake_cli(world.bindir, "codex", printed)
    write_config(world.home, world.runner())
    rc, report, checks = run_doctor_json(world.env())
    check = checks["runner.codex.version"]
    assert (rc, report["ok"], check["status"]) == (code, code == 0, status), check
    assert TESTED["codex"].text() in check["fix"] and "npm install -g @openai/codex@0.169.0" in check["fix"]
    assert [n for n, c in checks.items() if c["status"] not in ("ok", "skip")] == ["runner.codex.version"]


@slow
def test_a_provider_endpoint_that_does_not_answer_fails_with_the_proxy_and_base_url_fix(world: World) -> None:
    closed = f"http://127.0.0.1:{closed_port()}/v1"
    write_config(world.home, world.runner(codex_provider={"base_url": closed}))
    rc, report, checks = run_doctor_json(world.env())
    check = checks["runner.codex.provider"]
    assert (rc, report["ok"], check["status"]) == (1, False, "fail")
    assert closed in check["detail"] and "runner.codex_provider.base_url" in check["detail"]
    assert "HTTPS_PROXY" in check["fix"] and "ds config set runner.codex_provider.base_url" in check["fix"]
    assert checks["runner.claude.provider"]["status"] == "ok"  # the other provider still answers


@slow
def test_the_provider_is_asked_through_the_proxy_the_environment_names(world: World) -> None:
    # A host that does not resolve, reachable only through the proxy (our loopback endpoint).
    write_config(world.home, world.runner(codex_provider={"base_url": "http://provider.invalid/v1"}))
    rc, _, checks = run_doctor_json(world.env(HTTP_PROXY=world.provider.url, NO_PROXY="127.0.0.1,localhost"))
    check = checks["runner.codex.provider"]
    assert check["status"] == "ok" and f"via proxy {world.provider.url}" in check["detail"], check
    assert "GET http://provider.invalid/v1 HTTP/1.1" in world.provider.requests
    assert rc == 0


@slow
def test_an_invalid_config_fails_with_the_loaders_message_and_its_runners_are_skipped(world: World) -> None:
    world.home.config_path.write_text("runner:\n  max_attempt: 3\n")
    rc, _, checks = run_doctor_json(world.env())
    assert rc == 1 and checks["config"]["status"] == "fail"
    assert checks["config"]["detail"].startswith("bad_config: ") and "unknown key 'runner.max_attempt'" in checks["config"]["detail"]
    assert checks["runner"]["status"] == "skip" and not any(n.startswith("runner.") for n in checks)
    assert checks["mcp.memory"]["status"] == "ok"  # the other checks still run


@slow
def test_an_acp_runner_without_a_command_says_which_setting_to_make(world: World) -> None:
    write_config(world.home, world.runner(name="acp", commands={}))
    rc, _, checks = run_doctor_json(world.env())
    assert rc == 1 and checks["runner.acp.cli"]["status"] == "fail"
    assert checks["runner.acp.cli"]["fix"].startswith("ds config set runner.commands.acp ")
    assert not any(n.startswith("runner.codex") for n in checks)  # only the configured runners


@slow
def test_a_database_store_that_refuses_connections_is_log_unavailable(world: World) -> None:
    write_config(world.home, world.runner(), log={"connection_wait_seconds": 1})
    url = f"postgresql://ds@127.0.0.1:{closed_port()}/ds"
    rc, _, checks = run_doctor_json(world.env(DS_STORE=url))
    check = checks["store"]
    assert rc == 1 and check["status"] == "fail" and check["detail"].startswith("log_unavailable"), check
    assert "log.connection_wait_seconds is 1" in check["fix"]


@slow
def test_an_acp_agent_of_another_protocol_version_fails(world: World, tmp_path: Path) -> None:
    # An agent that answers initialize with protocol 2 (a real JSON-RPC exchange on stdio).
    agent = tmp_path / "acp2.py"
    agent.write_text(
        "import json, sys\n"
        "request = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'result': {'protocolVersion': 2, "
        "'agentInfo': {'name': 'future-agent', 'version': '9.0'}}}), flush=True)\n"
    )
    write_config(world.home, world.runner(name="acp", commands={"acp": [sys.executable, str(agent)]}))
    rc, _, checks = run_doctor_json(world.env())
    check = checks["runner.acp.version"]
    assert (rc, check["status"]) == (1, "fail") and "future-agent 9.0 answers ACP protocol 2, not 1" in check["detail"], check


@slow
def test_a_database_store_that_answers_is_ok(world: World, pg_database: str) -> None:
    write_config(world.home, world.runner())
    rc, _, checks = run_doctor_json(world.env(DS_STORE=pg_url(pg_database)))
    check = checks["store"]
    assert check["status"] == "ok" and check["detail"].endswith(": connected, 0 logs"), check
    assert rc == 0
