"""The scripted runner: plays a trajectory file through our real MCP servers.

For demos and tests, in place of a model: the agent process
(:mod:`ds_events.runners.scripted_agent`) is started like any agent CLI — its own
process group, the prompt on stdin, JSON lines on stdout — and calls the servers a real
agent would: the host's URLs for the turn (``runner.mcp_transport: http``, the default,
given in ``--mcp-config <run_dir>/mcp.json``) or the ``ds mcp --namespace ...`` servers
it starts (``stdio``). Its trajectory is YAML:

.. code-block:: yaml

    turns:                 # the quest's Nth turn plays turns[N-1] (retries replay it)
      - steps:
          - say: "Looking at prior work first."        # an agent message
          - think: "Search memory before anything."    # reasoning
          - call: memory.search                        # namespace.tool
            args: {query: "tokenizer ablation"}
            save: found                                # keep the result as {{found...}}
          - call: artifact.record
            args: {payload: {kind: idea, title: "Idea {{found.items.0.id}}"}}
            expect: error                              # the call must fail (default ok)
          - sleep: 0.5                                 # seconds, printing nothing
          - fail: "the model API is down"              # exit 1 ...
            attempts: 1                                # ... on attempts up to 1 only

A retry (``--retry-of RUN``) resumes after the last step the earlier attempts completed,
as the log shows them (a call's ``call-N`` result as expected, a message ``step-N``), with
the results they saved: a step that started a job is not run again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import yaml

from ds_events.config import RunnerConfig
from ds_events.errors import Invalid
from ds_events.services.runtime.commands import TurnSpec
from ds_events.services.runtime.turns import MCP_NAMESPACES, TurnRecorder

from .base import LineRunner, mcp_endpoints

__all__ = ["ScriptedRunner", "Trajectory", "Step", "load_trajectory"]

STEP_KINDS = ("say", "think", "call", "sleep", "fail")


class Step(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    say: str | None = None
    think: str | None = None
    call: str | None = None
    args: dict[str, Any] = {}
    save: str | None = None
    expect: str = "ok"  # ok | error | any
    sleep: float | None = None
    fail: str | None = None
    attempts: int = 10**6  # a fail step fails only on attempts up to this


class TurnScript(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = ""
    steps: list[Step] = []


class Trajectory(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    turns: list[TurnScript]


_checked: dict[tuple[str, int, int], Trajectory] = {}  # (path, mtime_ns, size) -> the file, checked


def load_trajectory(path: str | Path) -> Trajectory:
    """Read and check a trajectory file; a bad one is :class:`Invalid` (``bad_trajectory``).
    A file unchanged since it was last checked is not parsed again (a runner is made
    per turn, and YAML is slow to parse)."""
    try:
        stat = Path(path).stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = None
    if key is not None and key in _checked:
        return _checked[key]
    trajectory = _load(path)
    if key is not None:
        _checked[key] = trajectory
    return trajectory


def _load(path: str | Path) -> Trajectory:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise Invalid(f"cannot read trajectory {path}: {exc.strerror}", code="bad_trajectory") from None
    except yaml.YAMLError as exc:
        raise Invalid(f"trajectory {path} is not YAML: {exc}", code="bad_trajectory") from None
    try:
        trajectory = msgspec.convert(raw, Trajectory)
    except msgspec.ValidationError as exc:
        raise Invalid(f"trajectory {path}: {exc}", code="bad_trajectory") from None
    for t, turn in enumerate(trajectory.turns, 1):
        for s, step in enumerate(turn.steps, 1):
            where = f"trajectory {path}, turn {t}, step {s}"
            kinds = [k for k in STEP_KINDS if getattr(step, k) is not None]
            if len(kinds) != 1:
                raise Invalid(f"{where}: a step is exactly one of {', '.join(STEP_KINDS)}", code="bad_trajectory")
            if step.call is not None:
                namespace, _, tool = step.call.partition(".")
                if namespace not in MCP_NAMESPACES or not tool:
                    raise Invalid(f"{where}: call {step.call!r} is not namespace.tool", code="bad_trajectory")
            if step.expect not in ("ok", "error", "any"):
                raise Invalid(f"{where}: expect is ok, error or any", code="bad_trajectory")
    return trajectory


class ScriptedRunner(LineRunner):
    name = "scripted"

    def __init__(self, config: RunnerConfig, trajectory: str | None = None) -> None:
        super().__init__(config)
        path = trajectory or config.trajectory
        if not path:
            raise Invalid("the scripted runner needs a trajectory (runner.trajectory or --trajectory)", code="bad_trajectory")
        self.trajectory = str(Path(path).resolve())
        load_trajectory(self.trajectory)  # refuse a bad file before a turn starts

    def command(self, spec: TurnSpec) -> list[str]:
        argv = [
            sys.executable, "-m", "ds_events.runners.scripted_agent", "--trajectory", self.trajectory,
            "--turn", str(spec.turn_number), "--attempt", str(spec.attempt),
            *(["--retry-of", spec.retry_of] if spec.retry_of else []),
        ]  # fmt: skip
        endpoints = mcp_endpoints(spec)
        if any(ep.url for ep in endpoints):
            # Served by this host: the agent is told the URLs and the token, as Claude Code is.
            path = Path(spec.run_dir) / "mcp.json"
            servers = {ep.namespace: {"type": "http", "url": ep.url, "headers": ep.headers} for ep in endpoints}
            path.write_text(json.dumps({"mcpServers": servers}, indent=2) + "\n", encoding="utf-8")
            argv += ["--mcp-config", str(path)]
        return argv

    def handle(self, item: dict[str, Any], recorder: TurnRecorder) -> None:
        kind = item.get("type")
        if kind == "message":
            recorder.agent_message(str(item.get("text", "")), str(item.get("id", "")))
        elif kind == "reasoning":
            recorder.reasoning(str(item.get("text", "")))
        elif kind == "tool_call":
            recorder.tool_call(str(item.get("id")), str(item.get("tool")), item.get("arguments"), server=str(item.get("server", "")))
        elif kind == "tool_result":
            recorder.tool_result(str(item.get("id")), bool(item.get("ok")), item.get("output"))
        elif kind == "usage":
            recorder.add_usage({k: v for k, v in item.items() if k != "type"})
        elif kind == "error":
            self.failure = str(item.get("message", "error"))
