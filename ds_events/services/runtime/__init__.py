"""The runtime: turns, the scheduler, the prompt builder, stage skills, and steering
(pause/stop/resume, which ends shell sessions and the agent).

``commands`` is the domain's contract: what the scheduler, the prompt builder and the
runners (adapters in ``ds_events/runners``) hand each other for one turn. The verbs live
in the modules beside it and are re-exported here; ``errors`` catalogues its codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        Action as Action,
        ActionKind as ActionKind,
        PromptBuilder as PromptBuilder,
        PromptRequest as PromptRequest,
        RunResult as RunResult,
        TurnSpec as TurnSpec,
    )
    from .prompt import (
        BLOCKS as BLOCKS,
        NAMESPACES as NAMESPACES,
        SHRINK_ORDER as SHRINK_ORDER,
        SKILLS as SKILLS,
        BlockInfo as BlockInfo,
        BuiltPrompt as BuiltPrompt,
        MemoryItem as MemoryItem,
        PromptInputs as PromptInputs,
        build_prompt as build_prompt,
        check_run_id as check_run_id,
        default_skills_dir as default_skills_dir,
        default_system_prompt_path as default_system_prompt_path,
        gather_inputs as gather_inputs,
        message_terms as message_terms,
        prepare_prompt as prepare_prompt,
        prompt_path as prompt_path,
        select_skill as select_skill,
        write_prompt as write_prompt,
    )
    from .scheduler import QuestScheduler as QuestScheduler, Runner as Runner
    from .skills import (
        FRONTMATTER_FIELDS as FRONTMATTER_FIELDS,
        NOT_LITERAL as NOT_LITERAL,
        SECTIONS as SECTIONS,
        SKILL_NAMES as SKILL_NAMES,
        STAGE_SKILLS as STAGE_SKILLS,
        TOOL_NAMESPACES as TOOL_NAMESPACES,
        Skill as Skill,
        ToolCall as ToolCall,
        ToolRef as ToolRef,
        check_tool_calls as check_tool_calls,
        literal_value as literal_value,
        load_skill as load_skill,
        load_skills as load_skills,
        parse_skill as parse_skill,
        prompts_root as prompts_root,
        section_titles as section_titles,
        skill_path as skill_path,
        skills_root as skills_root,
        system_prompt_path as system_prompt_path,
        tool_calls as tool_calls,
        tool_references as tool_references,
    )
    from .steering import control as control
    from .turns import (
        MCP_NAMESPACES as MCP_NAMESPACES,
        Host as Host,
        TurnRecorder as TurnRecorder,
        claim_turn as claim_turn,
        finish_turn as finish_turn,
        next_action as next_action,
        recover_turns as recover_turns,
        run_dir as run_dir,
        stop_runner as stop_runner,
        turn_prompt as turn_prompt,
    )

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
