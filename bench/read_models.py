"""Read-model latency must not grow with log length: ``read_models.workflow`` and
``read_models.canvas(view=event|stage)`` on a quest whose log holds 10,000 events vs
``--big`` events (1,000,000 by default), views warm as the daemon keeps them.

Each log is built by appending event batches straight to the log (a realistic mix:
conversation messages, progress/idea/decision records, checkpoints on a few branches,
anchor changes), then folded once. Every round then times, per size, the median of
``--calls`` calls of each read model and of a raw baseline: ``log.tail(1)``, the
cheapest read that touches the log (measured in the same run, interleaved). Also timed:
one append then ``workflow`` (the read after news, which folds the new event into
copies of every handed-out projection state) against the bare append. Reported:
the median over ``--rounds`` rounds with the lowest and highest round, and the per-round
ratio big/10k (target <= 2).

    PYTHONPATH=$PWD python3 bench/read_models.py                 # 10k vs 1M
    PYTHONPATH=$PWD python3 bench/read_models.py --big 100000    # a quicker run
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._rounds import ratios, spread, verdict
from bench._util import append_in_batches, median_seconds
from ds_events.events import Event
from ds_events.events.artifact import ArtifactRecorded, BranchPrepared, GitCheckpointed
from ds_events.events.core import ConversationMessage, QuestAnchorChanged
from ds_events.home import Home, Quest
from ds_events.services.quest import read_models as read_models

_BATCH = 1000
_STAGES = ("scout", "baseline", "idea", "decision", "experiment", "analysis-campaign", "write")
_BRANCHES = ("main", "run/a", "run/b", "idea/c")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=30, help="calls per measure and round (their median is the round's figure)")
    args = parser.parse_args()
    sizes = (args.small, args.big)
    measures: dict[str, Callable[[Quest], object]] = {
        "workflow": lambda q: read_models.workflow(q),
        "canvas event": lambda q: read_models.canvas(q, "event"),
        "canvas stage": lambda q: read_models.canvas(q, "stage"),
        "raw log.tail(1)": lambda q: q.log.tail(1),
        # The daemon's usual case: an event arrived since the last read. Catching up then
        # folds it into copies of the handed-out states (Projection.thawed), for every
        # registered projection, not only the read models.
        "append+workflow": lambda q: (q.log.append(ConversationMessage(role="user", content="m")), read_models.workflow(q)),
        "raw append": lambda q: q.log.append(ConversationMessage(role="user", content="m")),
    }
    with tempfile.TemporaryDirectory(prefix="bench-read-models-") as tmp:
        quests: dict[int, Quest] = {}
        for n in sizes:
            t0 = time.perf_counter()
            quests[n] = _build(Path(tmp) / f"n{n}", n)
            for fn in measures.values():
                fn(quests[n])  # warm: the daemon has served these before
            print(f"built and folded {n:>9,} events in {time.perf_counter() - t0:6.1f} s")
        times: dict[tuple[str, int], list[float]] = {(m, n): [] for m in measures for n in sizes}
        for _ in range(args.rounds):
            for name, fn in measures.items():
                for n in sizes:
                    times[(name, n)].append(median_seconds(lambda: fn(quests[n]), args.calls))
        for q in quests.values():
            q.close()

    small, big = sizes
    print(f"\nlatency per call, median of {args.calls} calls per round; median over {args.rounds} rounds (spread):")
    for name in measures:
        a, b = times[(name, small)], times[(name, big)]
        print(f"  {name:<16} {small:>9,} events: {spread([x * 1e3 for x in a], '{:.3f}', ' ms')}")
        print(f"  {'':<16} {big:>9,} events: {spread([x * 1e3 for x in b], '{:.3f}', ' ms')}")
        r = ratios(b, a)
        print(f"  {'':<16} {big:,}/{small:,}: {spread(r, '{:.2f}', 'x')}  ({verdict(r, 2.0, higher_is_better=False)})")
    appended = ratios(times[("append+workflow", big)], times[("raw append", big)])
    print(f"  append+workflow / raw append at {big:,} events: {spread(appended, '{:.1f}', 'x')}")
    raw = times[("raw log.tail(1)", big)]
    for name in ("workflow", "canvas event", "canvas stage"):
        print(f"  {name} / raw log.tail(1) at {big:,} events: {spread(ratios(times[(name, big)], raw), '{:.1f}', 'x')}")


def _build(root: Path, n: int) -> Quest:
    home = Home(root / "home")
    home.init()
    quest = home.create_quest("bench", quest_id="bench")
    branches: list[Event] = [
        BranchPrepared(branch=b, branch_kind=b.split("/")[0], start_sha="0" * 40, start_point="main") for b in _BRANCHES[1:]
    ]
    rest = (_event(i) for i in range(len(branches), n - 1))  # create_quest appended the first event
    append_in_batches(quest.log, itertools.chain(branches, rest), _BATCH)
    quest.views.catch_up(keep=False)
    return quest


def _event(i: int) -> Event:
    branch = _BRANCHES[i % len(_BRANCHES)]
    match i % 10:
        case 0 | 1 | 2 | 3:
            return ConversationMessage(role="user" if i % 2 else "assistant", content=f"message {i} about the run")
        case 4 | 5:
            return ArtifactRecorded(artifact_id=f"progress-{i}", kind="progress", payload={"message": f"step {i}"}, branch=branch)
        case 6:
            return ArtifactRecorded(artifact_id=f"idea-{i}", kind="idea", payload={"title": f"idea {i}"}, branch=branch)
        case 7:
            return ArtifactRecorded(artifact_id=f"decision-{i}", kind="decision",
                                    payload={"verdict": "go", "action": "continue", "reason": "r"}, branch=branch)  # fmt: skip
        case 8:
            return GitCheckpointed(sha=f"{i:040x}", message=f"checkpoint {i}", branch=branch)
        case _:
            return QuestAnchorChanged(anchor=_STAGES[(i // 10) % len(_STAGES)])


if __name__ == "__main__":
    main()
