"""Runners: one module per agent, one interface (:class:`ds_events.services.runtime.scheduler.Runner`).

- ``codex``: the Codex CLI (``codex exec --json``) with an isolated ``CODEX_HOME``.
- ``claude``: Claude Code (``claude -p --output-format stream-json``).
- ``acp``: any Agent Client Protocol agent over stdio, driven with the SDK's client side.
- ``scripted``: plays a trajectory through our real MCP servers (demos, tests).

:func:`make_runner` builds one by name; the modules are imported on demand.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ds_events.config import RUNNER_NAMES, RunnerConfig
from ds_events.errors import Invalid

if TYPE_CHECKING:  # the runner modules and the scheduler are imported on demand
    from ds_events.home import Quest
    from ds_events.services.runtime.scheduler import QuestScheduler, Runner

__all__ = ["make_runner", "RUNNER_NAMES"]

_CLASSES = {
    "codex": ("ds_events.runners.codex", "CodexRunner"),
    "claude": ("ds_events.runners.claude", "ClaudeRunner"),
    "acp": ("ds_events.runners.acp", "AcpRunner"),
    "scripted": ("ds_events.runners.scripted", "ScriptedRunner"),
}


def make_runner(name: str, config: RunnerConfig, **options: Any) -> Runner:
    """The runner ``name`` (one of :data:`RUNNER_NAMES`) with ``config``; unknown names
    are :class:`Invalid` (``unknown_runner``)."""
    if name not in _CLASSES:
        raise Invalid(f"unknown runner {name!r}: use one of {', '.join(RUNNER_NAMES)}", code="unknown_runner")
    module, cls = _CLASSES[name]
    try:
        factory = getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as exc:
        raise Invalid(f"runner {name!r} is not available here: {exc}", code="unknown_runner") from None
    runner: Runner = factory(config, **options)
    return runner


def scheduler_for(
    quest: Quest, *, runner: str | None = None, model: str | None = None, trajectory: str | None = None
) -> QuestScheduler:
    """A :class:`~ds_events.services.runtime.scheduler.QuestScheduler` for ``quest``: the runner
    and model named here, else the quest's own (``ds quest set-runner``), else the
    home's ``runner`` config."""
    from ds_events.services.runtime.scheduler import QuestScheduler
    from ds_events.services.runtime.turns import turn_prompt

    config = quest.home.config().runner
    status = quest.state("status")
    name = runner or status.runner or config.name
    options: dict[str, Any] = {"trajectory": trajectory} if trajectory is not None else {}

    def build(n: str) -> Runner:
        return make_runner(n, config, **(options if n == "scripted" else {}))

    build(name)  # refuse an unknown runner or a bad trajectory now
    return QuestScheduler(
        quest, make_runner=build, runner=runner, model=model, config=config, build_prompt=turn_prompt,
    )  # fmt: skip
