"""The runtime: turns, the scheduler, the prompt builder, stage skills, and steering (pause/stop/resume, which ends sessions and the agent).

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
The verbs live in the modules beside this one and are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .skills import (
        SKILL_NAMES as SKILL_NAMES,
        SECTIONS as SECTIONS,
        FRONTMATTER_FIELDS as FRONTMATTER_FIELDS,
        TOOL_NAMESPACES as TOOL_NAMESPACES,
        Skill as Skill,
        ToolRef as ToolRef,
        ToolCall as ToolCall,
        skills_root as skills_root,
        skill_path as skill_path,
        prompts_root as prompts_root,
        system_prompt_path as system_prompt_path,
        load_skill as load_skill,
        load_skills as load_skills,
        parse_skill as parse_skill,
        section_titles as section_titles,
        tool_calls as tool_calls,
        tool_references as tool_references,
        check_tool_calls as check_tool_calls,
        literal_value as literal_value,
        NOT_LITERAL as NOT_LITERAL,
    )
    from .prompt import (
        STAGE_SKILLS as STAGE_SKILLS,
        SKILLS as SKILLS,
        BLOCKS as BLOCKS,
        SHRINK_ORDER as SHRINK_ORDER,
        NAMESPACES as NAMESPACES,
        MemoryItem as MemoryItem,
        PromptInputs as PromptInputs,
        BlockInfo as BlockInfo,
        BuiltPrompt as BuiltPrompt,
        select_skill as select_skill,
        message_terms as message_terms,
        build_prompt as build_prompt,
        gather_inputs as gather_inputs,
        prepare_prompt as prepare_prompt,
        write_prompt as write_prompt,
        prompt_path as prompt_path,
        default_system_prompt_path as default_system_prompt_path,
        default_skills_dir as default_skills_dir,
    )
    from .turns import (
        Host as Host,
        Action as Action,
        TurnSpec as TurnSpec,
        PromptRequest as PromptRequest,
        TurnRecorder as TurnRecorder,
        next_action as next_action,
        turn_prompt as turn_prompt,
        claim_turn as claim_turn,
        finish_turn as finish_turn,
        recover_turns as recover_turns,
        stop_runner as stop_runner,
        run_dir as run_dir,
        MCP_NAMESPACES as MCP_NAMESPACES,
    )
    from .scheduler import (
        Runner as Runner,
        RunResult as RunResult,
        QuestScheduler as QuestScheduler,
    )
    from .steering import (
        control as control,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "skills": ("SKILL_NAMES", "SECTIONS", "FRONTMATTER_FIELDS", "TOOL_NAMESPACES", "Skill", "ToolRef", "ToolCall", "skills_root", "skill_path", "prompts_root", "system_prompt_path", "load_skill", "load_skills", "parse_skill", "section_titles", "tool_calls", "tool_references", "check_tool_calls", "literal_value", "NOT_LITERAL"),
    "prompt": ("STAGE_SKILLS", "SKILLS", "BLOCKS", "SHRINK_ORDER", "NAMESPACES", "MemoryItem", "PromptInputs", "BlockInfo", "BuiltPrompt", "select_skill", "message_terms", "build_prompt", "gather_inputs", "prepare_prompt", "write_prompt", "prompt_path", "default_system_prompt_path", "default_skills_dir"),
    "turns": ("Host", "Action", "TurnSpec", "PromptRequest", "TurnRecorder", "next_action", "turn_prompt", "claim_turn", "finish_turn", "recover_turns", "stop_runner", "run_dir", "MCP_NAMESPACES"),
    "scheduler": ("Runner", "RunResult", "QuestScheduler"),
    "steering": ("control",),
})
