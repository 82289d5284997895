"""``ds demo``: an agent runs a small research quest, in a throwaway or given home.

The user's side is played by this command: it posts a message, and the real scheduler
runs a turn of the scripted agent (``ds_events/runners/trajectories/demo.yaml``), which
works through the real ``memory`` / ``artifact`` / ``bash_exec`` MCP servers exactly as
a coding agent would: scout notes into memory, a baseline with a metric contract, an
idea on its own branch, the main experiment as a detached shell job with progress, a
one-slice analysis campaign, and a blocking decision request that the user answers
while the turn waits (the reply is queued mid-turn and reaches the agent through
``artifact.interact``). Then it verifies the log, replays it, and says where to look.
``--serve`` then serves the quest (``ds serve``) until Ctrl-C, and hosts its turns with
the same scripted agent: a message sent from the page starts a turn (past the script's
six turns the agent says it has nothing left to do). Every address it prints carries
the port it really listens on.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import click

from ds_events.events.runner import AgentMessage
from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.services import quest as quest_service
from ds_events.verify import verify_home_log

from .common import out

__all__ = ["demo", "run_demo", "DEMO_TRAJECTORY"]

DEMO_TRAJECTORY = Path(__file__).resolve().parent.parent / "runners" / "trajectories" / "demo.yaml"

# What the user says before each turn (the agent's decisions move the stage between them).
USER_MESSAGES = (
    "Does label smoothing help a small ResNet on CIFAR-10? Find the comparator first.",
    "Good. Reproduce that baseline and pin its metric.",
    "Pick the idea worth testing first.",
    "Run the main experiment.",
    "Check the gain with one ablation before we write anything.",
    "Write it up.",
)
REPLY = "Write it up"


@click.command()
@click.option(
    "--home",
    "demo_home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Home to create the demo quest in (default: a new temporary directory).",
)
@click.option("--serve", "serve_after", is_flag=True, help="Then serve the quest over HTTP (ds serve) until Ctrl-C.")
@click.option("--port", type=int, default=8765, show_default=True, help="Port for --serve (0 picks a free one).")
def demo(demo_home: Path | None, serve_after: bool, port: int) -> None:
    """An agent runs a research quest: six turns through the real scheduler and MCP servers.

    Example: ds demo --home /tmp/ds-demo
    """
    root = demo_home if demo_home is not None else _given_home() or Path(tempfile.mkdtemp(prefix="ds-demo-"))
    home = Home(root.expanduser().resolve())  # absolute: the runner and MCP servers run in the quest's directory
    quest_id = run_demo(home, hints=not serve_after)
    if serve_after:
        from .common import TurnOptions
        from .serve import serve_home

        turns = TurnOptions(runner="scripted", model=None, trajectory=str(DEMO_TRAJECTORY))
        serve_home(home, "127.0.0.1", port, None, turns, quest_ids=[quest_id],
                   on_bound=lambda bound: _hints(home, quest_id, "127.0.0.1", bound, serving=True))  # fmt: skip


def _given_home() -> Path | None:
    """The group's ``ds --home DIR`` when given (``ds --home DIR demo`` is the form the
    demo's own hints print): the demo then runs there rather than in a temporary home."""
    ctx = click.get_current_context()
    given = ctx.find_root().params.get("home")
    return Path(given) if given is not None else None


def run_demo(home: Home, *, hints: bool = True) -> str:
    """Run the demo quest in ``home``; returns its id. ``hints``: end with where to look
    (``ds demo --serve`` prints them once the daemon listens, with its real port)."""
    home.init()
    quest = home.create_quest(
        "Demo: does label smoothing help a small CIFAR-10 ResNet?",
        brief="Reproduce the ResNet-20 baseline, try label smoothing 0.1, check the gain with an ablation, write it up.",
    )
    with Quest(home, quest.id, actor="scheduler") as host:
        out(f"home:    {home.root}")
        out(f"quest:   {quest.id}   (the agent: scripted, {DEMO_TRAJECTORY.name}; every step below is a real MCP call)")
        out("")
        asyncio.run(_turns(host))
        out("")
        _summary(host)
    quest.close()
    if hints:
        serve = home.config().serve
        _hints(home, quest.id, serve.host, serve.port, serving=False)
    return quest.id


async def _turns(quest: Quest) -> None:
    from ds_events.runners.base import close_mcp_host

    try:
        await _play(quest)
    finally:
        await close_mcp_host()


async def _play(quest: Quest) -> None:
    from ds_events.runners import scheduler_for

    scheduler = scheduler_for(quest, runner="scripted", trajectory=str(DEMO_TRAJECTORY))
    for n, text in enumerate(USER_MESSAGES, 1):
        quest_service.post_message(quest, quest_service.PostMessage(text=text), source="demo")
        out(f"you:     {text}")
        answering = asyncio.create_task(_answer_blocking_requests(quest))
        try:
            finished = await scheduler.run_until_idle()
        finally:
            answering.cancel()
        state = quest.state("turns")
        for end in finished[-1:] if finished else []:
            run_id = end.run_id or ""  # a turn's finish always names its run
            record = state.turns[run_id]
            said = _last_agent_message(quest, run_id)
            out(
                f"turn {n}:  {record.skill:<18} {record.outcome:<10} {record.tool_calls:>2} tool calls "
                f"{record.duration_ms / 1000:5.1f} s   agent: {said}"
            )
        scheduler.finished.clear()


async def _answer_blocking_requests(quest: Quest) -> None:
    """The user watches for a blocking decision request during the turn and answers it:
    the reply is queued while the agent waits in ``interact`` and reaches it there."""
    from ds_events.services import interactions

    answered: set[str] = set()
    while True:
        state = quest.state("interactions")
        for iid in state.open_requests:
            if iid not in answered:
                record = state.interactions[iid]
                out(f"agent asks: {record.message}")
                out(f"you reply:  {REPLY!r} (while the turn waits)")
                await asyncio.to_thread(
                    interactions.reply, quest,
                    interactions.Reply(interaction_id=iid, text=REPLY, option_id="write"), source="demo",
                )  # fmt: skip
                answered.add(iid)
        await asyncio.sleep(0.1)


def _last_agent_message(quest: Quest, run_id: str) -> str:
    said = [e.text for e in quest.log.read(types=[AgentMessage.TAG]) if isinstance(e, AgentMessage) and e.run_id == run_id]
    text = said[-1] if said else "(nothing)"
    return text if len(text) <= 90 else text[:87] + "..."


def _summary(quest: Quest) -> None:
    quest.views.materialise()  # take in what the MCP servers and shell monitors appended
    s = quest.state("status")
    turns = quest.state("turns")
    artifacts = quest.state("artifacts")
    out(f"status:  {s.status}, stage {s.anchor}, {s.last_seq} events, {turns.total} turns ({_outcomes(turns.outcomes)})")
    counts = s.counts
    out(
        f"record:  {counts.get('memory.card_written', 0)} memory cards, {len(artifacts.records)} artifacts, "
        f"{counts.get('bash.session_started', 0)} shell sessions, {counts.get('runner.tool_call', 0)} tool calls, "
        f"{counts.get('git.branch_prepared', 0)} branches"
    )
    report = verify_home_log(quest.home, quest.id)
    out(f"verify:  {'ok, hash chain intact' if report.ok else report.problems}")
    result = replay_quest(quest.root, quest_id=quest.id, log=quest.log)
    out(f"replay:  {result.events} events folded, {len(result.files_written)} file(s) differed (0 means the files match the log)")


def _hints(home: Home, quest_id: str, host: str, port: int, *, serving: bool) -> None:
    """Where to look next; ``host``/``port``: the daemon's (the bound port when
    ``serving``, else where ``ds serve`` would listen)."""
    root = home.root
    out("look:")
    out(f"  ds --home {root} events tail {quest_id} --format text     every event, in order")
    out(f"  ds --home {root} quest show {quest_id}")
    out(f"  {home.quest_root(quest_id)}/SUMMARY.md, memory/, artifacts/, .ds/runs/<run>/prompt.md")
    serve = "(served now, turns hosted)" if serving else f"ds --home {root} serve   then"
    out(f"  {serve}   curl -N http://{host}:{port}/api/quests/{quest_id}/events?stream=1")
    out(f"  open http://{host}:{port}/#/q/{quest_id}   (the page: Canvas, live trace, steering)")


def _outcomes(outcomes: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "none"
