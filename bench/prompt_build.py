"""Prompt build time must not grow with the log: ``services.prompt`` (gather the
inputs, then build) on a quest whose log holds 1,000 events vs ``--big`` events
(100,000 by default), views and memory index warm as the daemon keeps them.

Each log is built by appending event batches straight to the log (a realistic mix: user
messages and agent progress updates, idea/progress/decision records, memory cards of
every kind, checkpoints, anchor changes, a confirmed baseline and a main experiment
every thousand events); after each batch the mailbox is consumed through the service,
as turns would. The current message is one pending user message whose words match
some cards. Every round then times, per size, the median of ``--calls`` calls of:

- ``gather+build``: :func:`services.prompt.prepare_prompt` (no write), the real work of
  a turn's start: states lent from the views, the stage memory plan, a memory search
  with the message's words, the pure build;
- ``append+gather+build``: one event appended first (the usual case: something arrived
  since the last turn), so catching up and any copy of a handed-out state is included;
- ``raw log.tail(50)``: decoding the last 50 events, what a builder reading the recent
  log instead of the projections would start from (the raw baseline, same run).

Reported: the median over ``--rounds`` rounds with the lowest and highest round, and the
per-round ratio big/small (target <= 2).

    PYTHONPATH=$PWD python3 bench/prompt_build.py
    PYTHONPATH=$PWD python3 bench/prompt_build.py --big 20000 --rounds 5   # a quicker run
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._rounds import ratios, spread, verdict
from bench._util import append_in_batches, median_seconds
from ds_events.events import Event, new_event_id
from ds_events.events.artifact import (
    ArtifactRecorded,
    BaselineConfirmed,
    GitCheckpointed,
    MainExperimentRecorded,
)
from ds_events.events.core import ConversationMessage, QuestAnchorChanged
from ds_events.events.interaction import InteractionSent
from ds_events.events.memory import CardWritten
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext
from ds_events.services import quest as quests
from ds_events.services.interactions import mailbox as interactions
from ds_events.services.runtime import prompt as prompt

_BATCH = 1000
_STAGES = ("baseline", "idea", "experiment", "analysis-campaign", "experiment", "write")
_KINDS = ("papers", "ideas", "decisions", "episodes", "knowledge", "templates")
_TOPICS = ("warmup", "label smoothing", "mixup", "weight decay", "batch size", "cosine schedule", "dropout", "augmentation")
_SYSTEM = "# System\n\n" + "\n".join(f"- rule {i}: keep the quest's records true and current." for i in range(120))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=15, help="calls per measure and round (their median is the round's figure)")
    args = parser.parse_args()
    sizes = (args.small, args.big)
    with tempfile.TemporaryDirectory(prefix="bench-prompt-") as tmp:
        quests_by_size: dict[int, tuple[Quest, MemoryContext]] = {}
        for n in sizes:
            t0 = time.perf_counter()
            quest = _build(Path(tmp) / f"n{n}", n)
            mem = MemoryContext(quest=quest, actor="bench")
            quests_by_size[n] = (quest, mem)
            built = _prepare(quest, mem)  # warm: the index folds the cards once, as a daemon's would have
            print(f"built {n:>9,} events in {time.perf_counter() - t0:6.1f} s; prompt {built.chars:,} chars, "
                  f"skill {built.skill}, blocks cut: {[b.name for b in built.blocks if b.truncated] or 'none'}")  # fmt: skip
        measures: dict[str, Callable[[Quest, MemoryContext], object]] = {
            "gather+build": _prepare,
            "append+gather+build": lambda q, m: (q.log.append(_noise()), _prepare(q, m)),
            "raw log.tail(50)": lambda q, m: q.log.tail(50),
        }
        times: dict[tuple[str, int], list[float]] = {(name, n): [] for name in measures for n in sizes}
        for _ in range(args.rounds):
            for name, fn in measures.items():
                for n in sizes:
                    q, m = quests_by_size[n]
                    times[(name, n)].append(median_seconds(lambda: fn(q, m), args.calls))
        for q, m in quests_by_size.values():
            m.close()
            q.close()

    small, big = sizes
    print(f"\nlatency per call, median of {args.calls} calls per round; median over {args.rounds} rounds (spread):")
    for name in measures:
        a, b = times[(name, small)], times[(name, big)]
        print(f"  {name:<20} {small:>9,} events: {spread([x * 1e3 for x in a], '{:.3f}', ' ms')}")
        print(f"  {'':<20} {big:>9,} events: {spread([x * 1e3 for x in b], '{:.3f}', ' ms')}")
        r = ratios(b, a)
        target = f"  ({verdict(r, 2.0, higher_is_better=False)})" if name != "raw log.tail(50)" else ""
        print(f"  {'':<20} {big:,}/{small:,}: {spread(r, '{:.2f}', 'x')}{target}")
    raw = times[("raw log.tail(50)", big)]
    print(f"  gather+build / raw log.tail(50) at {big:,} events: {spread(ratios(times[('gather+build', big)], raw), '{:.1f}', 'x')}")


def _prepare(quest: Quest, mem: MemoryContext) -> prompt.BuiltPrompt:
    return prompt.prepare_prompt(quest, run_id="bench-run", runner="scripted", model="m", mem=mem, write=False,
                                 system_prompt=_SYSTEM)  # fmt: skip


def _build(root: Path, n: int) -> Quest:
    home = Home(root / "home")
    home.init()
    quest = home.create_quest("bench", quest_id="bench", brief="Improve CIFAR-10 ResNet-20 top-1.")
    events = _events(n - 3)  # create_quest, the last batch's delivery and the current message make the rest
    while True:
        batch = list(itertools.islice(events, _BATCH))
        if not batch:
            break
        append_in_batches(quest.log, batch, _BATCH)
        interactions.consume_mailbox(quest, consumer="bench")  # the turn that took these messages
    quests.post_message(quest, quests.PostMessage(text="Does warmup or label smoothing help calibration more?"))
    return quest


def _events(count: int) -> Iterator[Event]:
    yield BaselineConfirmed(
        baseline_id="resnet20", baseline_path="baselines/resnet20", contract_path="baselines/resnet20/json/metric_contract.json",
        contract={"metrics": {"top1": {"description": "top-1"}}}, metrics_summary={"top1": 0.916}, primary_metric="top1",
        metric_directions={"top1": "higher"},
    )  # fmt: skip
    for i in range(1, count):
        topic = _TOPICS[i % len(_TOPICS)]
        match i % 20:
            case 0 | 1 | 2:
                yield ConversationMessage(role="user", content=f"message {i}: what about {topic} at step {i}?")
            case 3 | 4:
                yield InteractionSent(interaction_id=f"ia-{new_event_id()}", kind="progress", message=f"step {i}: {topic} running",
                                      reply_mode="none", targets=["local"], routing_policy="fanout_all")  # fmt: skip
            case 5 | 6 | 7 | 8:
                yield ArtifactRecorded(artifact_id=f"progress-{i}", kind="progress", payload={"message": f"step {i}"})
            case 9:
                yield ArtifactRecorded(artifact_id=f"idea-{i}", kind="idea", payload={"title": f"try {topic} {i}"})
            case 10:
                yield ArtifactRecorded(artifact_id=f"decision-{i}", kind="decision",
                                       payload={"verdict": f"{topic} {i}", "action": "continue", "reason": "r"})  # fmt: skip
            case 11 | 12:
                kind = _KINDS[i % len(_KINDS)]
                yield CardWritten(card_id=f"{kind[:4]}-{i:08x}", kind=kind, title=f"{topic} lesson {i}",
                                  body=f"What {topic} did at step {i}: it changed top-1 by {i % 7 / 10:.1f} points.",
                                  scope="quest", source_quest="bench")  # fmt: skip
            case 13:
                yield GitCheckpointed(sha=f"{i:040x}", message=f"checkpoint {i}", branch="main")
            case 14 if i % 1000 == 14:
                yield MainExperimentRecorded(run=f"run-{i}", title=f"{topic} run {i}", baseline_id="resnet20",
                                             metrics_summary={"top1": 0.92}, primary_metric="top1",
                                             comparisons={"top1": {"delta": 0.004}})  # fmt: skip
            case 15 if i % 500 == 15:
                yield QuestAnchorChanged(anchor=_STAGES[(i // 500) % len(_STAGES)])
            case _:
                yield ConversationMessage(role="assistant", content=f"working on {topic} ({i})")


def _noise() -> Event:
    return ArtifactRecorded(artifact_id=f"progress-{new_event_id()}", kind="progress", payload={"message": "tick"})


if __name__ == "__main__":
    main()
