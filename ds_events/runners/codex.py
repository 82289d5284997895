"""The codex runner: the Codex CLI (``codex exec --json``) with an isolated ``CODEX_HOME``.

Each turn writes ``<quest>/.ds/codex-home/config.toml`` and runs

    codex exec --json --cd <quest> --skip-git-repo-check [--model M] -

with the prompt on stdin. The config registers our three MCP namespaces as stdio
servers (``ds mcp --namespace ...`` under this interpreter). Codex starts them with a
small environment of its own, not ours, so each server table carries the quest in
``env`` (DS_HOME, DS_QUEST_ID, DS_RUN_ID, and PYTHONPATH when set, so a source checkout
serves its own code). ``required = true`` makes a server that fails to start fail the
turn instead of leaving the agent without its tools, and ``default_tools_approval_mode =
"approve"`` lets an unattended run call them. Codex offers each server to the model as
a tool namespace ``mcp__<server>`` (Codex 0.169: the model calls ``write`` in namespace
``mcp__memory``). With ``runner.mcp_transport: http`` the tables name this host's URLs
for the turn instead (``url``, and ``bearer_token_env_var = "DS_MCP_TOKEN"``: the
turn's token reaches Codex in its environment, never in the file).

The model provider is Codex's default (OpenAI; the user's ``auth.json`` is copied into
the isolated home) unless ``runner.codex_provider`` names a Responses-API endpoint:
then a ``[model_providers.<name>]`` table with ``wire_api = "responses"``, ``base_url``,
``env_key`` and the retry limits.

For example, in ``DS_HOME/config.yaml``:

.. code-block:: yaml

    runner:
      name: codex
      model: gpt-5-codex                  # else Codex's own default
      commands: {codex: [/opt/node/bin/codex]}   # else ``codex`` on PATH
      codex_sandbox: workspace-write      # Codex's own shell commands; our servers run outside it
      codex_provider:                     # else OpenAI with the user's Codex login
        name: gateway
        base_url: http://127.0.0.1:8000/v1
        env_key: GATEWAY_API_KEY

Codex prints one JSON object per line (``thread.started``, ``turn.started``,
``item.started`` / ``item.updated`` / ``item.completed``, ``turn.completed`` with usage,
``turn.failed``, ``error``); :meth:`CodexRunner.handle` turns them into turn events:

=====================================  ===============================================
Codex line                             turn event
=====================================  ===============================================
item ``agent_message`` / ``plan``      ``runner.agent_message``
item ``reasoning``, ``todo_list``      ``runner.reasoning``
item ``mcp_tool_call``                 ``runner.tool_call`` (tool ``memory.write``,
                                       server ``memory``) at start, ``runner.tool_result``
                                       at completion (``failed`` is an error)
item ``command_execution``             tool ``shell`` (``{"command": ...}``), the same way
item ``file_change``, ``web_search``,  tool ``file_change`` / ``web_search`` /
``collab_tool_call``                   ``collab.<tool>``
``turn.completed``                     usage added to the turn's
``turn.failed``, ``error``             the turn fails with that message (an ``error``
                                       followed by ``turn.completed`` was a retry)
item ``error``                         a warning: kept in the raw stream only
=====================================  ===============================================
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ds_events.config import RunnerConfig
from ds_events.errors import Invalid
from ds_events.services.runtime.commands import RunResult, TurnSpec
from ds_events.services.runtime.turns import TurnRecorder

from .base import TOKEN_ENV, LineRunner, agent_env, mcp_endpoints, mcp_server_command, serving_turn

__all__ = ["CodexRunner", "codex_home", "render_config", "TOOL_ITEMS"]

# Thread items that are tool calls (named by _tool_of); the rest are text or warnings.
TOOL_ITEMS = frozenset({"mcp_tool_call", "command_execution", "file_change", "web_search", "collab_tool_call"})
_ITEM_FIELDS = ("id", "type", "status")  # not arguments of a non-MCP tool item
_MCP_STARTUP_TIMEOUT_SEC = 60  # our servers are Python processes on a possibly busy machine


def codex_home(spec: TurnSpec) -> Path:
    """The quest's isolated ``CODEX_HOME``: ``<quest>/.ds/codex-home``."""
    return Path(spec.quest_root) / ".ds" / "codex-home"


def render_config(spec: TurnSpec, config: RunnerConfig, *, pythonpath: str | None = None) -> str:
    """The text of ``config.toml`` for one turn of ``spec``."""
    lines = [
        "# Written by ds-events for every turn of this quest; edits are overwritten.",
        f"approval_policy = {_toml('never')}",
        f"sandbox_mode = {_toml(config.codex_sandbox)}",
        "check_for_update_on_startup = false",
    ]
    provider = config.codex_provider
    if provider is not None:
        lines.append(f"model_provider = {_toml(provider.name)}")
    for endpoint in mcp_endpoints(spec):
        namespace = endpoint.namespace
        lines += ["", f"[mcp_servers.{namespace}]"]
        if endpoint.url:
            # Served by this host: the turn's token reaches Codex in its env, never on disk.
            lines += [f"url = {_toml(endpoint.url)}", f"bearer_token_env_var = {_toml(TOKEN_ENV)}"]
        else:
            argv = mcp_server_command(namespace)
            env = {"DS_HOME": spec.env.get("DS_HOME", spec.home), "DS_QUEST_ID": spec.env.get("DS_QUEST_ID", spec.quest_id)}
            env["DS_RUN_ID"] = spec.run_id
            if pythonpath:
                env["PYTHONPATH"] = pythonpath
            lines += [f"command = {_toml(argv[0])}", f"args = {_toml(argv[1:])}", f"env = {_toml(env)}"]
        lines += [
            "required = true",
            f"default_tools_approval_mode = {_toml('approve')}",
            f"startup_timeout_sec = {_MCP_STARTUP_TIMEOUT_SEC}",
            # A tool call may run as long as the scheduler lets the agent be silent.
            f"tool_timeout_sec = {int(max(60.0, config.stall_seconds))}",
        ]
    if provider is not None:
        lines += [
            "",
            f"[model_providers.{provider.name}]",
            f"name = {_toml(provider.name)}",
            f"base_url = {_toml(provider.base_url)}",
            f"wire_api = {_toml('responses')}",
            f"request_max_retries = {provider.request_max_retries}",
            f"stream_max_retries = {provider.stream_max_retries}",
        ]
        if provider.env_key:
            lines.append(f"env_key = {_toml(provider.env_key)}")
    # Nothing leaves the machine but the model requests.
    lines += ["", "[analytics]", "enabled = false", "", "[feedback]", "enabled = false"]
    lines += ["", "[history]", f"persistence = {_toml('none')}"]
    return "\n".join(lines) + "\n"


class CodexRunner(LineRunner):
    name = "codex"

    def __init__(self, config: RunnerConfig) -> None:
        super().__init__(config)
        self.thread_id = ""
        self.warnings: list[str] = []  # non-fatal error items (kept in the raw stream)
        self._open_calls: set[str] = set()  # item ids whose tool_call is recorded
        self._token = ""  # the turn's bearer token when this host serves its tools

    async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult:
        program = self.executable("codex")[0]
        if shutil.which(program) is None:
            raise Invalid(
                f"the Codex CLI {program!r} is not installed or not executable: install it "
                "(npm install -g @openai/codex) or set runner.commands.codex in DS_HOME/config.yaml",
                code="runner_not_found",
            )  # fmt: skip
        async with serving_turn(spec, self.config) as endpoints:
            self.prepare_home(spec)
            self._token = next((e.token for e in endpoints if e.token), "")
            return await super().run(spec, recorder)

    def command(self, spec: TurnSpec) -> list[str]:
        argv = [*self.executable("codex"), "exec", "--json", "--cd", self.workspace(spec), "--skip-git-repo-check"]
        if spec.model:
            argv += ["--model", spec.model]
        return [*argv, "-"]

    def environment(self, spec: TurnSpec) -> dict[str, str]:
        extra = {"CODEX_HOME": str(codex_home(spec))}
        if self._token:
            extra[TOKEN_ENV] = self._token
        return agent_env(spec, extra)

    def prepare_home(self, spec: TurnSpec) -> Path:
        """Write the isolated home's ``config.toml`` (and bring the user's login)."""
        home = codex_home(spec)
        home.mkdir(parents=True, exist_ok=True)
        text = render_config(spec, self.config, pythonpath=os.environ.get("PYTHONPATH") or None)
        tmp = home / "config.toml.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, home / "config.toml")
        if self.config.codex_provider is None:
            _bring_login(home)
        return home

    # -- the stream ---------------------------------------------------------------------

    def handle(self, item: dict[str, Any], recorder: TurnRecorder) -> None:
        kind = item.get("type")
        if kind == "thread.started":
            self.thread_id = str(item.get("thread_id", ""))
        elif kind in ("item.started", "item.updated", "item.completed"):
            body = item.get("item")
            if isinstance(body, dict):
                self._item(kind, body, recorder)
        elif kind == "turn.completed":
            self.failure = ""  # an earlier ``error`` line was a retry that recovered
            usage = item.get("usage")
            if isinstance(usage, dict):
                recorder.add_usage(usage)
        elif kind == "turn.failed":
            error = item.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            self.failure = str(message or "codex reported turn.failed")
        elif kind == "error":
            self.failure = str(item.get("message") or "codex reported an error")

    def _item(self, kind: str, body: dict[str, Any], recorder: TurnRecorder) -> None:
        item_type = str(body.get("type", ""))
        item_id = str(body.get("id", ""))
        done = kind == "item.completed"
        if item_type in TOOL_ITEMS:
            if item_id not in self._open_calls:
                self._open_calls.add(item_id)
                tool, server, arguments = _tool_of(item_type, body)
                recorder.tool_call(item_id, tool, arguments, server=server)
            if done:
                self._open_calls.discard(item_id)
                ok, output = _result_of(item_type, body)
                recorder.tool_result(item_id, ok, output)
            return
        if not done:
            return  # text items are recorded whole, once
        if item_type in ("agent_message", "plan"):
            recorder.agent_message(str(body.get("text", "")), message_id=item_id)
        elif item_type == "reasoning":
            recorder.reasoning(str(body.get("text", "")))
        elif item_type == "todo_list":
            entries = body.get("items") or []
            recorder.reasoning("\n".join(
                f"- [{'x' if e.get('completed') else ' '}] {e.get('text', '')}" for e in entries if isinstance(e, dict)
            ))  # fmt: skip
        elif item_type == "error":
            self.warnings.append(str(body.get("message", "")))


# -- helpers ----------------------------------------------------------------------------


def _tool_of(item_type: str, body: dict[str, Any]) -> tuple[str, str, Any]:
    """(tool name, MCP server, arguments) of a tool item."""
    if item_type == "mcp_tool_call":
        server = str(body.get("server", ""))
        return f"{server}.{body.get('tool', '')}", server, body.get("arguments")
    if item_type == "command_execution":
        return "shell", "", {"command": body.get("command", "")}
    if item_type == "file_change":
        return "file_change", "", {"changes": body.get("changes", [])}
    if item_type == "web_search":
        return "web_search", "", {"query": body.get("query", ""), "action": body.get("action")}
    if item_type == "collab_tool_call":
        return f"collab.{body.get('tool', '')}", "", {"prompt": body.get("prompt"), "receivers": body.get("receiver_thread_ids")}
    return item_type, "", {k: v for k, v in body.items() if k not in _ITEM_FIELDS}


def _result_of(item_type: str, body: dict[str, Any]) -> tuple[bool, Any]:
    """(ok, output) of a completed tool item."""
    status = body.get("status")
    if item_type == "mcp_tool_call":
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return False, {"message": error["message"]}
        raw = body.get("result")
        result: dict[str, Any] = raw if isinstance(raw, dict) else {}
        output = result.get("structured_content")
        if output is None:
            output = _content_value(result.get("content") or [])
        return status == "completed", output
    if item_type == "command_execution":
        return status == "completed", {"exit_code": body.get("exit_code"), "output": body.get("aggregated_output", "")}
    if item_type == "file_change":
        return status == "completed", {"changes": body.get("changes", [])}
    if item_type == "collab_tool_call":
        return status == "completed", {"agents_states": body.get("agents_states")}
    return status in (None, "completed"), {k: v for k, v in body.items() if k not in _ITEM_FIELDS}


def _content_value(content: list[Any]) -> Any:
    """An MCP result's content blocks as one value: the JSON in its text when it is
    JSON (our servers' errors are), else the text."""
    text = "".join(str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _bring_login(home: Path) -> None:
    """Copy the user's Codex login (``auth.json``) into the isolated home, when there is
    one and it changed: with Codex's default provider the agent needs it."""
    source_home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    source = source_home / "auth.json"
    target = home / "auth.json"
    try:
        if source.resolve() == target.resolve() or not source.is_file():
            return
        if target.exists() and target.read_bytes() == source.read_bytes():
            return
        shutil.copy2(source, target)
        os.chmod(target, 0o600)
    except OSError:
        return  # no login to bring: Codex says so itself when it needs one


def _toml(value: Any) -> str:
    """``value`` as a TOML value: strings (JSON's escapes are TOML's), numbers,
    booleans, arrays, inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # JSON escapes the control characters TOML forbids raw, except DEL.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")
