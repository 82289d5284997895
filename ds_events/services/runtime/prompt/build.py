"""The pure builder and the writer: :func:`build_prompt` turns :class:`PromptInputs` into
the text (same inputs, same bytes; no I/O, no clock), :func:`write_prompt` stores it,
:func:`prepare_prompt` does the three steps in one call."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds_events.home import Quest
from ds_events.paths import write_atomic

from .blocks import block_contents
from .budget import BLOCKS, BlockInfo, fit
from .files import prompt_path
from .inputs import PromptInputs, gather_inputs, select_skill

__all__ = ["BuiltPrompt", "build_prompt", "write_prompt", "prepare_prompt"]


@dataclass(frozen=True)
class BuiltPrompt:
    text: str
    sha256: str
    blocks: tuple[BlockInfo, ...]
    skill: str
    skill_reason: str

    @property
    def chars(self) -> int:
        return len(self.text)


def build_prompt(inputs: PromptInputs) -> BuiltPrompt:
    """The turn's prompt from ``inputs``: no I/O, no clock, same inputs -> same bytes."""
    skill, reason = select_skill(inputs.status, inputs.interactions, inputs.messages)
    cfg = inputs.config
    blocks = block_contents(inputs, skill, reason)
    budgets = {name: getattr(cfg.budgets, name) for name in BLOCKS}
    text, infos = fit(blocks, budgets, cfg.max_chars)
    return BuiltPrompt(
        text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), blocks=infos, skill=skill, skill_reason=reason
    )


def prepare_prompt(quest: Quest, *, run_id: str, runner: str, write: bool = True, **kwargs: Any) -> BuiltPrompt:
    """Gather, build and (by default) store a turn's prompt; returns it."""
    with gather_inputs(quest, run_id=run_id, runner=runner, **kwargs) as inputs:
        built = build_prompt(inputs)
    if write:
        write_prompt(quest, run_id, built)
    return built


def write_prompt(quest: Quest, run_id: str, built: BuiltPrompt) -> Path:
    """Store ``built`` at ``<quest>/.ds/runs/<run_id>/prompt.md`` (atomically); returns the path."""
    path = prompt_path(quest, run_id)
    write_atomic(path, built.text.encode("utf-8"))
    return path
