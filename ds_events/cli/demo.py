"""``ds demo``: one quest end to end, in a throwaway or given home.

It drives the same service calls the MCP tools and the CLI use: quest lifecycle,
memory cards and search, artifacts on a git branch with a metric contract, the
mailbox, and a durable shell session. Then it verifies the log and replays it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.services import quests as quest_service
from ds_events.verify import verify_log

from .common import out

__all__ = ["demo", "run_demo"]


@click.command()
@click.option(
    "--home",
    "demo_home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Home to create the demo quest in (default: a new temporary directory).",
)
def demo(demo_home: Path | None) -> None:
    """Create a demo quest, drive it through every namespace, print its status and log.

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
        out(f"home:    {home.root}")
        out(f"quest:   {quest.id}")
        quest_service.post_message(quest, quest_service.PostMessage(text="Start with the published ResNet-20 baseline, please."))
        quest_service.change_anchor(quest, quest_service.ChangeAnchor(anchor="baseline", reason="scouting done: baseline paper found"))
        _memory(quest)
        _artifacts(quest)
        _mailbox(quest)
        _shell(quest)
        quest_service.control(quest, quest_service.Control(action="pause", reason="user reviews the results"))
        quest_service.control(quest, quest_service.Control(action="resume"))
        _summary(quest)
        return quest.id


def _memory(quest: Quest) -> None:
    from ds_events.memory.store import MemoryContext
    from ds_events.services import memory as memory_service
    from ds_events.services.memory import SearchCards, WriteCard

    mem = MemoryContext(quest, actor="demo")
    try:
        memory_service.write(mem, WriteCard(
            kind="knowledge", title="ResNet-20 baseline needs weight decay on BN",
            body="Without it we were 1.5 points under the paper.", tags=["baseline"],
        ))  # fmt: skip
        memory_service.write(mem, WriteCard(
            kind="papers", title="Label smoothing (Szegedy et al.): 0.1 is the usual value",
            body="Hurts teacher calibration in distillation.",
        ))  # fmt: skip
        dup = memory_service.write(mem, WriteCard(
            kind="knowledge", title="ResNet-20 baseline needs BN weight decay", body="We were 1.5 points under the paper without it."
        ))  # fmt: skip
        out(f"memory:  a near-duplicate write was refused ({dup.status}, like {dup.candidates[0].id})")
        for hit in memory_service.search(mem, SearchCards(query="why is our baseline below the paper", limit=2)).results:
            out(f"         search found {hit.id}: {hit.title}")
    finally:
        mem.close()


def _artifacts(quest: Quest) -> None:
    from ds_events.services import artifact_commands as cmd
    from ds_events.services import artifacts as artifact_service
    from ds_events.services import git as git_service

    idea = artifact_service.record(
        quest, cmd.Record(payload={"kind": "idea", "title": "Label smoothing 0.1", "hypothesis": "better calibration"})
    )
    branch = git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="ls-0.1", idea_id=idea.artifact_id))
    assert branch.worktree_path is not None
    (Path(branch.worktree_path) / "train.py").write_text("LABEL_SMOOTHING = 0.1\n")
    cp = git_service.checkpoint(quest, cmd.Checkpoint(message="label smoothing 0.1: training script"))
    artifact_service.confirm_baseline(
        quest,
        cmd.ConfirmBaseline(
            baseline_path="baselines/resnet20",
            baseline_id="resnet20",
            metric_contract={
                "metrics": {
                    "top1": {
                        "description": "CIFAR-10 test top-1",
                        "derivation": "correct / 10000",
                        "source_ref": "He et al. 2016, Table 6",
                    }
                },
                "evaluation_protocol": {"split": "test"},
            },
            metrics_summary={"top1": 0.916},
            primary_metric="top1",
            summary="ResNet-20 reproduced",
        ),
    )
    quest_service.change_anchor(quest, quest_service.ChangeAnchor(anchor="experiment", reason="baseline confirmed"))
    run = artifact_service.record_main_experiment(
        quest, cmd.RecordMainExperiment(run_id="ls-0.1", title="Label smoothing 0.1", metrics_summary={"top1": 0.921})
    )
    out(
        f"artifact: idea {idea.artifact_id} on branch {branch.branch}, checkpoint {cp.sha[:10]}; "
        f"top1 {run.primary['delta']:+.3f} vs the confirmed baseline"
    )


def _mailbox(quest: Quest) -> None:
    from ds_events.services import interactions

    quest_service.post_message(quest, quest_service.PostMessage(text="Please report the accuracy delta with a 95% CI."))
    progress = interactions.Interact(message="Baseline reproduced at 91.6% top-1.")
    first = interactions.interact(quest, progress, consumer="demo")
    out(f"mailbox: interact() delivered {first.new_message_count} new message(s): {[m.text for m in first.new_messages]}")
    again = interactions.interact(quest, progress, consumer="demo")
    out(f"         the same progress again was suppressed: {again.suppressed}")
    ask = interactions.interact(
        quest,
        interactions.Interact(
            kind="decision_request",
            message="Label smoothing helped (+0.5). Next?",
            options=[{"id": "sweep", "label": "Sweep 0.05-0.2"}, {"id": "write", "label": "Write it up"}],
        ),
    )
    assert ask.interaction_id is not None
    interactions.reply(
        quest, interactions.Reply(interaction_id=ask.interaction_id, text="Write it up", option_id="write"), source="demo"
    )
    reply = interactions.interact(quest, interactions.Interact(message="Writing the report."), consumer="demo").new_messages[0]
    out(f"         the decision request was answered: {reply.text!r} (option {reply.option_id})")


def _shell(quest: Quest) -> None:
    import asyncio

    from ds_events.services import bash_commands as bash
    from ds_events.services import bash_exec as bash_service

    command = 'for i in 1 2 3; do echo "epoch $i"; done; echo \'__DS_PROGRESS__ {"epoch": 3, "acc": 0.921}\''
    session = bash_service.start(quest, bash.StartSession(command=command))
    session = asyncio.run(bash_service.await_session(quest, bash.AwaitSession(id=session.id, wait_timeout_seconds=30)))
    out(f"bash:    session {session.id} {session.status} (exit {session.exit_code}), progress {session.progress}")
    for line in bash_service.read_output(quest, bash.ReadOutput(id=session.id, tail=2)).output.splitlines():
        out(f"         | {line}")


def _summary(quest: Quest) -> None:
    quest.views.materialise()  # take in what the session's monitor process appended
    s = quest.state("status")
    out(f"status:  {s.status}, anchor {s.anchor}, {s.last_seq} events")
    out("events by type:")
    for kind, n in sorted(s.counts.items()):
        out(f"  {kind:<36} {n}")
    report = verify_log(quest.log.path)
    out(f"verify:  {'ok, hash chain intact' if report.ok else report.problems}")
    result = replay_quest(quest.root, quest_id=quest.id)
    out(f"replay:  {result.events} events folded, {len(result.files_written)} file(s) differed (0 means the files match the log)")
    files = sorted(p.relative_to(quest.root).as_posix() for p in Path(quest.root).rglob("*") if p.is_file() and ".git" not in p.parts and ".ds" not in p.parts)
    out(f"files:   {len(files)} materialised, e.g. {', '.join(files[:6])}")
    out(f"try:     ds --home {quest.home.root} events tail {quest.id}")
