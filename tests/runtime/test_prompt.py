"""The turn prompt: skill selection, the blocks and their budgets, the whole-prompt cap,
the golden prompt of a quest built with real services, and where a prompt is stored.

The golden file is ``fixtures/prompts/golden.md``. After an intended change to the
prompt, regenerate it and review the diff:

    DS_REGEN_PROMPT_GOLDEN=1 PYTHONPATH=$PWD python3 -m pytest -q tests/runtime/test_prompt.py -k golden
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ds_events.config import PromptBudgets, PromptConfig
from ds_events.errors import Invalid
from ds_events.events import ConversationMessage
from ds_events.events.interaction import InteractionReplied
from ds_events.events.memory import CardWritten
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext
from ds_events.services import artifacts, quest as quests
from ds_events.services.artifacts import commands as acmd
from ds_events.services.interactions import mailbox as ia
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.commands import WriteCard
from ds_events.services.runtime import prompt as prompt
from projections.interactions import InboundItem, InteractionRecord, State as InteractionsState
from projections.status import StatusState

from ..conftest import FIXTURES

GOLDEN = FIXTURES / "prompts" / "golden.md"
REGEN = os.environ.get("DS_REGEN_PROMPT_GOLDEN") == "1"
SYSTEM = "# System prompt (test fixture)\n\nYou run a research quest through three MCP namespaces.\nRecord everything.\n"


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    """Small stand-ins for skills/<stage>/SKILL.md (the real ones are product content)."""
    root = tmp_path / "skills"
    for stage in ("baseline", "experiment", "decision"):
        (root / stage).mkdir(parents=True)
        (root / stage / "SKILL.md").write_text(f"---\nname: {stage}\n---\n# {stage}\n")
    return root


def build(quest: Quest, skills_dir: Path, mem: MemoryContext | None = None, **over: Any) -> prompt.BuiltPrompt:
    kwargs: dict[str, Any] = dict(run_id="run-0001", runner="scripted", model="fixture-model", system_prompt=SYSTEM,
                                  skills_dir=skills_dir, mem=mem)  # fmt: skip
    kwargs.update(over)
    return prompt.prepare_prompt(quest, write=False, **kwargs)


# -- skill selection ----------------------------------------------------------------------


def _item(kind: str = "message", iid: str | None = None, item_id: str = "m1") -> InboundItem:
    if kind == "reply":
        return InboundItem(event=InteractionReplied(id=item_id, seq=9, ts="t", interaction_id=iid or "", text="hello"))
    return InboundItem(event=ConversationMessage(id=item_id, seq=9, ts="t", role="user", content="hello"))


def _request(iid: str, mode: str, status: str) -> InteractionRecord:
    return InteractionRecord(interaction_id=iid, seq=3, ts="t", actor="mcp:artifact", kind="decision_request",
                             message="which?", reply_mode=mode, status=status)  # fmt: skip


# (anchor, requests {id: (reply_mode, status)}, open request ids, message items, expected skill, reason contains)
SKILL_TABLE = [
    *[(stage, {}, [], [], stage, "active anchor") for stage in prompt.STAGE_SKILLS],
    *[(stage, {}, [], [_item()], stage, "active anchor") for stage in prompt.STAGE_SKILLS],
    ("decision", {}, [], [], "decision", "not a stage skill"),
    ("", {}, [], [_item()], "decision", "not a stage skill"),
    ("no-such-stage", {}, [], [], "decision", "not a stage skill"),
    # a reply to a blocking request that is still open in the state the turn reads
    ("experiment", {"ia-1": ("blocking", "waiting")}, ["ia-1"], [_item("reply", "ia-1")], "decision", "ia-1"),
    # the reply's own event closed it: still a reply to a blocking request
    ("write", {"ia-1": ("blocking", "answered")}, [], [_item("reply", "ia-1")], "decision", "ia-1"),
    # a message and a reply in one turn: the reply decides
    ("idea", {"ia-2": ("blocking", "answered")}, [], [_item(), _item("reply", "ia-2", "m2")], "decision", "ia-2"),
    # a reply to a threaded (non-blocking) interaction, or to an unknown one: the anchor
    ("baseline", {"ia-3": ("threaded", "sent")}, [], [_item("reply", "ia-3")], "baseline", "active anchor"),
    ("finalize", {}, [], [_item("reply", "ia-404")], "finalize", "active anchor"),
    # an open request the turn's messages do not answer does not change the skill
    ("scout", {"ia-1": ("blocking", "waiting")}, ["ia-1"], [_item()], "scout", "active anchor"),
]


@pytest.mark.parametrize(("anchor", "requests", "open_ids", "items", "skill", "why"), SKILL_TABLE)
def test_the_skill_follows_the_selection_table(
    anchor: str, requests: dict[str, tuple[str, str]], open_ids: list[str], items: list[InboundItem], skill: str, why: str
) -> None:
    status = StatusState(anchor=anchor)
    state = InteractionsState(
        interactions={iid: _request(iid, mode, st) for iid, (mode, st) in requests.items()}, open_requests=list(open_ids)
    )
    chosen, reason = prompt.select_skill(status, state, items)
    assert chosen == skill
    assert why in reason


def test_a_reply_through_real_services_selects_decision_and_names_the_request(quest: Quest, skills_dir: Path) -> None:
    quests.change_anchor(quest, quests.ChangeAnchor(anchor="experiment"))
    sent = ia.interact(quest, ia.Interact(message="Keep the run going?", kind="decision_request",
                                          options=[{"id": "go", "label": "Go"}, {"id": "stop", "label": "Stop"}]))  # fmt: skip
    assert build(quest, skills_dir).skill == "experiment"  # the request is open, nothing answers it yet
    ia.reply(quest, ia.Reply(interaction_id=str(sent.interaction_id), text="go on", option_id="go"))
    built = build(quest, skills_dir)
    assert built.skill == "decision"
    assert sent.interaction_id in built.skill_reason
    assert f"`{skills_dir / 'decision' / 'SKILL.md'}` (read it first" in built.text


# -- the golden prompt --------------------------------------------------------------------


def _golden_quest(home: Home, quest: Quest, mem: MemoryContext) -> None:
    """A quest with messages, memory cards, a confirmed baseline and a main experiment,
    and an open blocking request, built through the services a runner's tools call."""
    quests.post_message(quest, quests.PostMessage(text="Reproduce ResNet-20 on CIFAR-10, then try label smoothing."))
    ia.interact(quest, ia.Interact(message="Starting with the baseline reproduction.", kind="progress"))
    for kind, title, body in [
        ("knowledge", "CIFAR-10 ResNet-20 needs 160 epochs to reach 91.6 top-1", "Shorter schedules stall near 90."),
        ("episodes", "Data loader workers crashed with shared memory errors", "Use --shm-size 2g in the container."),
        ("ideas", "Label smoothing may calibrate ResNet-20 better", "Try epsilon 0.1 and compare nll."),
        ("papers", "He et al. 2016 deep residual learning", "Table 6 gives ResNet-20 at 91.25 top-1."),
    ]:
        memory_service.write(mem, WriteCard(kind=kind, title=title, body=body))
    artifacts.confirm_baseline(quest, acmd.ConfirmBaseline(
        baseline_path="baselines/resnet20", baseline_id="resnet20",
        metric_contract={"metrics": {
            "top1": {"description": "top-1 accuracy on the test set", "derivation": "correct / 10000", "source_ref": "Table 6"},
            "nll": {"description": "test negative log-likelihood", "derivation": "mean over the test set",
                    "source_ref": "reproduced run", "direction": "lower"},
        }},
        metrics_summary={"top1": 0.916, "nll": 0.31}, primary_metric="top1", summary="reproduced within 0.1 points",
    ))  # fmt: skip
    quests.change_anchor(quest, quests.ChangeAnchor(anchor="experiment", reason="baseline confirmed"))
    artifacts.record_main_experiment(quest, acmd.RecordMainExperiment(
        run_id="ls01", title="Label smoothing 0.1", metrics_summary={"top1": 0.921, "nll": 0.28}, summary="small gain",
    ))  # fmt: skip
    artifacts.record(quest, acmd.Record(payload={
        "kind": "decision", "verdict": "label smoothing helps", "action": "continue", "reason": "top1 +0.005 and nll lower",
    }))  # fmt: skip
    ia.interact(quest, ia.Interact(message="Run the analysis campaign on calibration, or write up now?",
                                   kind="decision_request", options=[
                                       {"id": "analyse", "label": "Run the campaign", "recommended": True},
                                       {"id": "write", "label": "Write up now"}]))  # fmt: skip
    quests.post_message(quest, quests.PostMessage(text="How does label smoothing change calibration on CIFAR-10?"))


def normalise(text: str, home: Home, skills_dir: Path) -> str:
    """The prompt with its volatile parts (paths, ids, times) replaced by stable names,
    numbered in order of first appearance so the structure still shows."""
    text = text.replace(str(skills_dir), "<SKILLS>").replace(str(home.root), "<HOME>")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<TS>", text)
    names: dict[str, str] = {}

    def name(prefix: str) -> Any:
        def sub(m: re.Match[str]) -> str:
            return names.setdefault(m.group(0), f"{prefix}{sum(1 for v in names.values() if v.startswith(prefix)) + 1}>")
        return sub

    text = re.sub(r"ia-[0-9a-f]{32}", name("<ia-"), text)
    return re.sub(r"\b(paper|idea|decision|episode|knowledge|template)-[0-9a-f]{8}\b", name("<card-"), text)


def test_the_prompt_of_a_quest_built_with_real_services_matches_the_golden_file(
    home: Home, quest: Quest, mem: MemoryContext, skills_dir: Path
) -> None:
    _golden_quest(home, quest, mem)
    built = build(quest, skills_dir, mem)
    again = build(quest, skills_dir, mem)
    assert (again.text, again.sha256) == (built.text, built.sha256)  # deterministic
    text = normalise(built.text, home, skills_dir)
    if REGEN:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text)
    assert GOLDEN.is_file(), "no golden file: run with DS_REGEN_PROMPT_GOLDEN=1 (see the module docstring)"
    assert text == GOLDEN.read_text(), "the prompt changed: review, then regenerate (see the module docstring)"
    # What the golden file must show, whatever its wording.
    names = [b.name for b in built.blocks]
    assert names == list(prompt.BLOCKS)
    assert not any(b.truncated for b in built.blocks)
    assert built.skill == "experiment"
    for needle in ("baseline gate: open, `resnet20`", "latest main experiment `ls01`", "open requests waiting for the user: 1",
                   "(options: analyse, write)", "Data loader workers crashed", "How does label smoothing change calibration"):
        assert needle in built.text, needle
    # Blocks come in their order; the current message is the last thing in the prompt.
    positions = [built.text.index(h) for h in ("## Runtime context", "## Talking to the user", "## Skills", "## Quest files",
                                               "## Recent durable state", "## Interaction style",
                                               "## Priority memory for this turn", "## Recent conversation",
                                               "## Current message")]  # fmt: skip
    assert positions == sorted(positions)
    assert built.text.rstrip().endswith("How does label smoothing change calibration on CIFAR-10?")


def test_memory_matching_the_message_comes_first_then_the_stage_plan(
    quest: Quest, mem: MemoryContext, skills_dir: Path
) -> None:
    for kind, title in [("knowledge", "Warmup stabilises transformer training"), ("papers", "Attention is all you need, revisited"),
                        ("knowledge", "Cosine schedules beat step schedules here")]:  # fmt: skip
        memory_service.write(mem, WriteCard(kind=kind, title=title, body="details"))
    quests.post_message(quest, quests.PostMessage(text="Why does warmup matter for transformer training?"))
    text = build(quest, skills_dir, mem).text
    block = text[text.index("## Priority memory") : text.index("## Recent conversation")]
    lines = [line for line in block.splitlines() if line.startswith("- [")]
    assert "Warmup stabilises transformer training" in lines[0] and ", search]" in lines[0]
    assert all(", plan]" in line for line in lines[1:]) and len(lines) == 3


# -- budgets and the whole-prompt cap -----------------------------------------------------


def test_a_block_over_its_budget_is_cut_visibly_and_keeps_its_most_useful_end(quest: Quest, skills_dir: Path) -> None:
    quest.emit([ConversationMessage(role="user", content=f"message number {i} " + "x" * 200) for i in range(60)])
    ia.consume_mailbox(quest)  # earlier turns delivered these
    quests.post_message(quest, quests.PostMessage(text="the newest message"))
    system = "\n".join(f"rule {i}: " + "r" * 80 for i in range(500))
    budgets = PromptBudgets(system=3000, conversation=2500)
    built = build(quest, skills_dir, system_prompt=system, config=PromptConfig(budgets=budgets, conversation_items=50))
    info = {b.name: b for b in built.blocks}
    assert info["system"].truncated and info["system"].chars <= 3000
    assert info["conversation"].truncated and info["conversation"].chars <= 2500
    assert not info["runtime"].truncated and not info["message"].truncated
    text = built.text
    assert "rule 0: " in text and "rule 499: " not in text  # the system prompt keeps its start
    conversation = text[text.index("## Recent conversation") : text.index("## Current message")]
    assert "message number 58 " in conversation  # the newest before the current one survive ...
    assert "message number 0 " not in conversation  # ... the oldest go
    assert re.search(r"\[… truncated: \d+ of 50 messages \(older ones\) cut or left out to fit 2500 chars", conversation)
    assert re.search(r"\[… truncated: \d+ of 500 lines \(later ones\) cut or left out to fit 3000 chars", text)


def test_one_huge_message_is_cut_inside_its_budget_and_says_where_the_rest_is(quest: Quest, skills_dir: Path) -> None:
    quests.post_message(quest, quests.PostMessage(text="START " + "y" * 90_000 + " END"))
    built = build(quest, skills_dir, config=PromptConfig(budgets=PromptBudgets(message=5000)))
    message = next(b for b in built.blocks if b.name == "message")
    assert message.truncated and message.chars <= 5000
    assert "START yyyy" in built.text and " END" not in built.text
    assert "the whole text is in the quest log at the seq shown" in built.text


def test_the_whole_prompt_stays_under_max_chars_with_a_huge_conversation_and_huge_memory(
    quest: Quest, mem: MemoryContext, skills_dir: Path
) -> None:
    quest.emit([ConversationMessage(role="user", content=f"calibration note {i} " + "z" * 3000) for i in range(400)])
    ia.consume_mailbox(quest)
    quest.emit([
        CardWritten(card_id=f"knowledge-{i:08x}", kind="knowledge", title=f"calibration lesson {i} " + "w " * 60,
                    body="calibration " * 400, scope="quest", source_quest=quest.id)
        for i in range(300)
    ])  # fmt: skip
    for i in range(20):
        ia.interact(quest, ia.Interact(message=f"update {i} " + "u" * 5000, kind="milestone"))
    quests.post_message(quest, quests.PostMessage(text="calibration " * 3000))
    huge = PromptBudgets(**{name: 1_000_000 for name in prompt.BLOCKS})
    cfg = PromptConfig(max_chars=20_000, budgets=huge, conversation_items=200, memory_per_kind=20,
                       memory_search_limit=50, conversation_item_chars=100_000)  # fmt: skip
    built = build(quest, skills_dir, mem, system_prompt=SYSTEM * 200, config=cfg)
    assert len(built.text) <= 20_000
    info = {b.name: b for b in built.blocks}
    assert info["conversation"].truncated and info["memory"].truncated
    assert sum(b.chars for b in built.blocks) <= 20_000
    # The shrinking takes history and retrieved context first: the rules and who/where survive.
    assert not info["runtime"].truncated
    # A huge system prompt does not crowd out the user's message: each block keeps a
    # tenth of the cap before any is cut further.
    assert info["message"].chars >= 1_800 and info["system"].chars >= 1_800
    assert "## Current message" in built.text and "## Runtime context" in built.text
    # Each block says it was cut.
    assert built.text.count("[… truncated:") == sum(b.truncated for b in built.blocks)


def test_max_chars_holds_for_every_cap_down_to_its_minimum(quest: Quest, skills_dir: Path) -> None:
    quest.emit([ConversationMessage(role="user", content="m " * 2000) for _ in range(50)])
    big = PromptBudgets(**{name: 50_000 for name in prompt.BLOCKS})
    for cap in (4_000, 5_000, 9_999, 30_000, 200_000):
        built = build(quest, skills_dir, system_prompt="s " * 40_000, config=PromptConfig(max_chars=cap, budgets=big))
        assert len(built.text) <= cap, cap


# -- what building costs -------------------------------------------------------------------


def test_build_prompt_reads_no_file_and_no_clock(quest: Quest, skills_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quests.post_message(quest, quests.PostMessage(text="hello there"))
    with prompt.gather_inputs(quest, run_id="r1", runner="scripted", system_prompt=SYSTEM, skills_dir=skills_dir) as inputs:
        expected = prompt.build_prompt(inputs)
        with monkeypatch.context() as m:
            for target in ("builtins.open", "os.open", "os.stat", "os.listdir", "os.scandir",
                           "time.time", "time.time_ns", "time.monotonic"):  # fmt: skip
                m.setattr(target, _forbidden(target))
            built = prompt.build_prompt(inputs)
    assert built == expected and "hello there" in built.text


def _forbidden(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"build_prompt called {name}")

    return call


def test_building_a_prompt_leaves_no_projection_state_to_copy_on_the_next_event(
    quest: Quest, mem: MemoryContext, skills_dir: Path
) -> None:
    memory_service.write(mem, WriteCard(kind="knowledge", title="warmup stabilises training", body="b"))
    quests.post_message(quest, quests.PostMessage(text="what about warmup?"))
    names = ("status", "interactions", "artifacts", "bash_sessions", "memory")
    quest.emit(ConversationMessage(role="assistant", content="flush"))  # anything handed out before is copied now
    states = {name: quest.views._states[name] for name in names}
    built = build(quest, skills_dir, mem)
    assert "warmup stabilises training" in built.text  # the memory search and plan ran
    quest.emit(ConversationMessage(role="assistant", content="news"))
    # Lent, not handed out: the next event is folded into the same objects, no copy made.
    assert {name: quest.views._states[name] is states[name] for name in names} == dict.fromkeys(names, True)


# -- the prompt is true to the tools as built --------------------------------------------


def test_every_tool_and_argument_the_prompt_names_is_one_our_servers_offer(quest: Quest, skills_dir: Path) -> None:
    from tests.mcp_support import discover_tools

    offered = {f"{ns}.{tool.name}": set(tool.input_schema.get("properties", {})) for ns, tool in discover_tools()}
    quest.emit([ConversationMessage(role="user", content="m " * 500) for _ in range(30)])
    quest.emit(CardWritten(card_id="knowledge-00000001", kind="knowledge", title="a lesson", body="b", source_quest=quest.id))
    ia.consume_mailbox(quest)
    quests.post_message(quest, quests.PostMessage(text="the current message " * 200))
    tiny = PromptBudgets(**{name: 200 for name in prompt.BLOCKS})  # every block cut: every marker's hint shows
    texts = [build(quest, skills_dir).text, build(quest, skills_dir, config=PromptConfig(budgets=tiny)).text]
    named = [m for text in texts for m in re.finditer(r"\b(memory|artifact|bash_exec)\.(\w+)(?:\(([^)]*)\))?", text)]
    assert {m.group(0).split("(")[0] for m in named} >= {"artifact.interact", "artifact.record", "memory.write", "memory.read"}
    for m in named:
        tool = f"{m.group(1)}.{m.group(2)}"
        assert tool in offered, f"the prompt names {tool}, which no server offers"
        for arg in re.findall(r"(\w+)=", m.group(3) or ""):
            assert arg in offered[tool], f"the prompt names {tool}({arg}=...), which it does not take"


# -- storing the prompt ---------------------------------------------------------------------


def test_write_prompt_stores_the_text_under_the_run_and_its_hash_is_the_files(quest: Quest, skills_dir: Path) -> None:
    import hashlib

    built = build(quest, skills_dir)
    path = prompt.write_prompt(quest, "run-0001", built)
    assert path == quest.root / ".ds" / "runs" / "run-0001" / "prompt.md"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == built.sha256
    again = prompt.prepare_prompt(quest, run_id="run-0002", runner="scripted", system_prompt=SYSTEM, skills_dir=skills_dir)
    assert (quest.root / ".ds" / "runs" / "run-0002" / "prompt.md").read_text() == again.text


@pytest.mark.parametrize("run_id", ["", ".", "..", "../escape", "a/b", "/abs", ".hidden", "a\x00b", "x" * 129, "a..b", 7])
def test_a_bad_run_id_is_refused_and_nothing_is_written(quest: Quest, skills_dir: Path, run_id: Any) -> None:
    built = build(quest, skills_dir)
    with pytest.raises(Invalid) as err:
        prompt.write_prompt(quest, run_id, built)
    assert err.value.code == "invalid_run_id"
    with pytest.raises(Invalid) as err:
        build(quest, skills_dir, run_id=run_id)
    assert err.value.code == "invalid_run_id"
    assert not (quest.root / ".ds" / "runs").exists()


def test_a_runs_directory_linked_out_of_the_quest_is_refused(quest: Quest, skills_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (quest.root / ".ds" / "runs").symlink_to(outside)
    with pytest.raises(Invalid) as err:
        prompt.write_prompt(quest, "run-0001", build(quest, skills_dir))
    assert err.value.code == "invalid_run_id"
    assert list(outside.iterdir()) == []


def test_a_bad_prompt_config_is_bad_config_naming_the_key(home: Home, quest: Quest, skills_dir: Path) -> None:
    for text, key in [("prompt:\n  max_chars: 10\n", "prompt.max_chars"),
                      ("prompt:\n  budgets:\n    memroy: 500\n", "prompt.budgets.memroy")]:  # fmt: skip
        home.config_path.write_text(text)
        with pytest.raises(Invalid) as err:
            build(quest, skills_dir)
        assert (err.value.code, err.value.details["key"]) == ("bad_config", key)
    home.config_path.write_text(yaml.safe_dump({"prompt": {"max_chars": 5000, "budgets": {"system": 300}}}))
    built = build(quest, skills_dir, system_prompt="s\n" * 1000)
    assert len(built.text) <= 5000 and built.blocks[0].chars <= 300
