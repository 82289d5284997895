"""The runtime: turns, the scheduler, the prompt builder, stage skills, and steering
(pause/stop/resume, which ends shell sessions and the agent).

``commands`` is the domain's contract: what the scheduler, the prompt builder and the
runners (adapters in ``ds_events/runners``) hand each other for one turn. The verbs live
in the modules beside it and are re-exported here; ``errors`` catalogues its codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import Action as Action
    from .commands import ActionKind as ActionKind
    from .commands import PromptBuilder as PromptBuilder
    from .commands import PromptRequest as PromptRequest
    from .commands import RunResult as RunResult
    from .commands import TurnSpec as TurnSpec
    from .prompt import BLOCKS as BLOCKS
    from .prompt import NAMESPACES as NAMESPACES
    from .prompt import SHRINK_ORDER as SHRINK_ORDER
    from .prompt import SKILLS as SKILLS
    from .prompt import BlockInfo as BlockInfo
    from .prompt import BuiltPrompt as BuiltPrompt
    from .prompt import MemoryItem as MemoryItem
    from .prompt import PromptInputs as PromptInputs
    from .prompt import build_prompt as build_prompt
    from .prompt import check_run_id as check_run_id
    from .prompt import default_skills_dir as default_skills_dir
    from .prompt import default_system_prompt_path as default_system_prompt_path
    from .prompt import gather_inputs as gather_inputs
    from .prompt import message_terms as message_terms
    from .prompt import prepare_prompt as prepare_prompt
    from .prompt import prompt_path as prompt_path
    from .prompt import select_skill as select_skill
    from .prompt import write_prompt as write_prompt
    from .scheduler import QuestScheduler as QuestScheduler
    from .scheduler import Runner as Runner
    from .skills import FRONTMATTER_FIELDS as FRONTMATTER_FIELDS
    from .skills import NOT_LITERAL as NOT_LITERAL
    from .skills import SECTIONS as SECTIONS
    from .skills import SKILL_NAMES as SKILL_NAMES
    from .skills import STAGE_SKILLS as STAGE_SKILLS
    from .skills import TOOL_NAMESPACES as TOOL_NAMESPACES
    from .skills import Skill as Skill
    from .skills import ToolCall as ToolCall
    from .skills import ToolRef as ToolRef
    from .skills import check_tool_calls as check_tool_calls
    from .skills import literal_value as literal_value
    from .skills import load_skill as load_skill
    from .skills import load_skills as load_skills
    from .skills import parse_skill as parse_skill
    from .skills import prompts_root as prompts_root
    from .skills import section_titles as section_titles
    from .skills import skill_path as skill_path
    from .skills import skills_root as skills_root
    from .skills import system_prompt_path as system_prompt_path
    from .skills import tool_calls as tool_calls
    from .skills import tool_references as tool_references
    from .steering import control as control
    from .turns import MCP_NAMESPACES as MCP_NAMESPACES
    from .turns import Host as Host
    from .turns import TurnRecorder as TurnRecorder
    from .turns import claim_turn as claim_turn
    from .turns import finish_turn as finish_turn
    from .turns import next_action as next_action
    from .turns import recover_turns as recover_turns
    from .turns import run_dir as run_dir
    from .turns import stop_runner as stop_runner
    from .turns import turn_prompt as turn_prompt

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "commands": (
            "ActionKind", "Action", "PromptRequest", "PromptBuilder", "TurnSpec", "RunResult",
        ),
        "skills": (
            "STAGE_SKILLS", "SKILL_NAMES", "SECTIONS", "FRONTMATTER_FIELDS", "TOOL_NAMESPACES", "Skill", "ToolRef", "ToolCall",
            "skills_root", "skill_path", "prompts_root", "system_prompt_path", "load_skill", "load_skills", "parse_skill",
            "section_titles", "tool_calls", "tool_references", "check_tool_calls", "literal_value", "NOT_LITERAL",
        ),
        "prompt": (
            "SKILLS", "BLOCKS", "SHRINK_ORDER", "NAMESPACES", "MemoryItem", "PromptInputs", "BlockInfo", "BuiltPrompt",
            "select_skill", "message_terms", "build_prompt", "gather_inputs", "prepare_prompt", "write_prompt", "prompt_path",
            "check_run_id", "default_system_prompt_path", "default_skills_dir",
        ),
        "turns": (
            "Host", "TurnRecorder", "next_action", "turn_prompt", "claim_turn", "finish_turn", "recover_turns", "stop_runner",
            "run_dir", "MCP_NAMESPACES",
        ),
        "scheduler": (
            "Runner", "QuestScheduler",
        ),
        "steering": (
            "control",
        ),
    },
)
