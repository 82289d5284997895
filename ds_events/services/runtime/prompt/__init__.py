"""The turn prompt: which stage skill a turn uses, and the text the runner is given.

Three steps, so the part that decides what the agent reads has no I/O at all (one module each,
with the blocks' contents and the budgets beside the builder):

- :func:`gather_inputs` (a context manager) reads: the quest's projection states, lent
  for the block rather than copied (``Views.lend``), the cards of the stage memory plan
  and a memory search with the words of the user's message, which context files and
  skill files exist, and ``config.yaml``'s ``prompt`` section.
- :func:`build_prompt` is pure: the same :class:`PromptInputs` give the same text, byte
  for byte. It reads only bounded parts of the states (the newest items of a dict, the
  open requests), so it costs the same on a quest of 1,000 events and of 1,000,000.
- :func:`write_prompt` stores the text at ``<quest>/.ds/runs/<run_id>/prompt.md``; its
  sha256 goes into the turn's event.

Blocks, in order (``config.yaml`` ``prompt.budgets`` names each one's budget): the system
prompt (``system``); runtime context (``runtime``: home, quest, anchor and branch, the
skill and why, runner, model, conversation, MCP namespaces); the communication surface
(``communication``: ``artifact.interact``); skill files, referenced by path
(``skills``); quest context files (``quest_files``); recent durable state
(``durable_state``: baseline gate, latest main experiment, open requests, running shell
sessions, recent decisions); interaction style (``interaction_style``); priority memory
(``memory``); the recent conversation (``conversation``); the current message(s)
(``message``). A block longer than its budget is cut where it matters least (the
oldest conversation, the lowest-ranked memory, the end of a text) and says so in the
text; if the blocks together still exceed ``prompt.max_chars``, they are shrunk in
:data:`SHRINK_ORDER` until the whole prompt fits.
"""

from __future__ import annotations

from .blocks import block_contents
from .budget import BLOCKS, SHRINK_ORDER, Block, BlockInfo, fit, one_line
from .build import BuiltPrompt, build_prompt, prepare_prompt, write_prompt
from .files import check_run_id, prompt_path
from .inputs import (
    CONTEXT_FILES,
    NAMESPACES,
    SKILLS,
    STAGE_SKILLS,
    MemoryItem,
    PromptInputs,
    default_skills_dir,
    default_system_prompt_path,
    gather_inputs,
    message_terms,
    select_skill,
)

__all__ = [
    "STAGE_SKILLS",
    "SKILLS",
    "BLOCKS",
    "SHRINK_ORDER",
    "NAMESPACES",
    "CONTEXT_FILES",
    "MemoryItem",
    "PromptInputs",
    "BlockInfo",
    "BuiltPrompt",
    "Block",
    "select_skill",
    "message_terms",
    "build_prompt",
    "block_contents",
    "fit",
    "one_line",
    "gather_inputs",
    "prepare_prompt",
    "write_prompt",
    "check_run_id",
    "prompt_path",
    "default_system_prompt_path",
    "default_skills_dir",
]
