"""A minimal prompt until the prompt builder lands: the messages and the skill path."""

from __future__ import annotations

from pathlib import Path

from ds_events.home import Quest

from .turns import PromptRequest


def build_prompt(quest: Quest, request: PromptRequest) -> str:
    skills = Path(__file__).resolve().parents[2] / "skills"
    lines = [f"# Turn {request.run_id} of quest {quest.id}", f"Skill: {skills / request.skill / 'SKILL.md'}", ""]
    if request.continuation:
        lines.append("The previous turn was cut off: continue where it stopped.")
    for item in request.messages:
        lines.append(f"User ({item.kind}): {item.text}")
    return "\n".join(lines) + "\n"
