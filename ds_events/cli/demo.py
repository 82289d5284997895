"""``ds demo``: a quest end to end, in a throwaway or given home."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ds_events.home import Home
from ds_events.services import quests as quest_service
from ds_events.verify import verify_log

from .common import out

__all__ = ["demo", "run_demo"]


@click.command()
@click.option("--home", "demo_home", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Home to create the demo quest in (default: a new temporary directory).")
def demo(demo_home: Path | None) -> None:
    """Create a demo quest, drive it through a few steps, print its status and log.

    Example: ds demo --home /tmp/ds-demo
    """
    home = Home(demo_home if demo_home is not None else tempfile.mkdtemp(prefix="ds-demo-"))
    run_demo(home)


def run_demo(home: Home) -> str:
    home.init()
    quest = home.create_quest(
        "Demo: does label smoothing help a small CIFAR-10 ResNet?",
        brief="Reproduce the baseline, try label smoothing 0.1, and report the accuracy delta.",
    )
    with quest:
        quest_service.post_message(quest, "Start with the published ResNet-20 baseline, please.")
        quest_service.change_anchor(quest, "baseline", reason="scouting done: baseline paper found")
        quest_service.post_message(quest, "Baseline reproduced at 91.6% top-1.", role="assistant", source="runner")
        quest_service.control(quest, "pause", reason="user reviews the baseline")
        quest_service.control(quest, "resume")
        quest_service.change_anchor(quest, "experiment", reason="baseline confirmed")
        quest_service.post_message(quest, "Label smoothing 0.1: 92.1% top-1 (+0.5).", role="assistant", source="runner")
        s = quest.state("status")
        out(f"home:    {home.root}")
        out(f"quest:   {s.quest_id} — {s.title}")
        out(f"status:  {s.status}, anchor {s.anchor}, {s.last_seq} events")
        out("events by type:")
        for kind, n in sorted(s.counts.items()):
            out(f"  {kind:<26} {n}")
        out("log:")
        for event in quest.log.read():
            out(f"  {event.seq:>3} {event.type:<24} {event.actor}")
        report = verify_log(quest.log.path)
        out(f"verify:  {'ok, hash chain intact' if report.ok else report.problems}")
        out(f"files:   {', '.join(sorted(p.name for p in Path(quest.root).iterdir() if p.is_file()))}")
        out(f"try:     ds --home {home.root} events tail {s.quest_id}")
        return s.quest_id
