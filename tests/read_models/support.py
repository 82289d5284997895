"""Build a quest through the real services: records, branches, a checkpoint, messages,
a memory card, an anchor change, a campaign. Shared by the read-model tests."""

from __future__ import annotations

from ds_events.home import Quest
from ds_events.memory.store import MemoryContext
from ds_events.services import artifacts, quest as quests
from ds_events.services.artifacts import checkpoints as git
from ds_events.services.artifacts.commands import Checkpoint, PrepareBranch, Record
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.commands import WriteCard
from ds_events.services.quest.lifecycle import ChangeAnchor, PostMessage

__all__ = ["build_quest"]


def build_quest(quest: Quest) -> dict[str, str]:
    """Fill ``quest`` with one of everything the read models show; returns the names made."""
    quests.post_message(quest, PostMessage(text="Please reproduce ResNet-20 and try a warmup idea."))
    quests.change_anchor(quest, ChangeAnchor(anchor="baseline", reason="start from the paper's numbers"))
    (quest.root / "notes.md").write_text("first notes\n")
    git.checkpoint(quest, Checkpoint(message="notes: first pass"))
    idea = artifacts.record(quest, Record(payload={"kind": "idea", "title": "Linear warmup", "summary": "5 epochs warmup"}))
    quests.change_anchor(quest, ChangeAnchor(anchor="decision", reason="choose"))
    artifacts.record(quest, Record(payload={"kind": "decision", "verdict": "go", "action": "prepare_branch", "reason": "promising"}))
    quests.change_anchor(quest, ChangeAnchor(anchor="experiment"))
    branch = git.prepare_branch(quest, PrepareBranch(run_id="warm-1", idea_id=idea.artifact_id))
    artifacts.record(quest, Record(payload={"kind": "run", "run_kind": "smoke", "run_id": "warm-1", "paths": ["runs/warm-1/log.txt"]}))
    quests.post_message(quest, PostMessage(text="Smoke run done.", role="assistant"))
    mem = MemoryContext(quest=quest, actor="test")
    memory_service.write(mem, WriteCard(kind="knowledge", title="Warmup stabilises early training", body="seen in the smoke run"))
    return {"idea": idea.artifact_id, "branch": branch.branch}
