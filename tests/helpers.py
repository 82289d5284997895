"""Helpers shared by tests: parsing MCP tool errors, running ``ds`` as a subprocess,
bounded waiting, seeded random sequences of real events."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

import ds_events.events as ev
import ds_events.events.artifact as eva
import ds_events.events.bash as evb
import ds_events.events.interaction as evi
import ds_events.events.memory as evm
import ds_events.events.paper as evp
import ds_events.events.research as evre
import ds_events.events.runner as evr
import ds_events.events.tool as evt
from ds_events.events import Event
from ds_events.home import Home

__all__ = ["tool_error", "ds_env", "stdio_server", "DS", "distinct_body", "write_shared_lesson", "wait_until", "wait_until_async", "event_payloads", "random_events", "EVENT_TAGS_MADE"]


def tool_error(result: object) -> dict:
    """The JSON payload of an MCP tool error result (``{"error": code, ...}``)."""
    assert getattr(result, "is_error", False), f"expected a tool error, got {result!r}"
    text = result.content[0].text  # type: ignore[attr-defined]
    return json.loads(text[text.index("{") :])


def ds_env(home: Home, **extra: str) -> dict[str, str]:
    """Environment for running ``ds`` (or a stdio MCP server) as a subprocess."""
    env = dict(os.environ)
    env["DS_HOME"] = str(home.root)
    env.update(extra)
    return env


DS = [sys.executable, "-m", "ds_events"]


def stdio_server(home: Home, namespace: str, quest_id: str = "q1") -> Any:
    """``ds mcp --namespace <namespace>`` as a runner starts it: a subprocess speaking
    stdio, bound to ``quest_id`` (an ``mcp.StdioServerParameters``)."""
    import mcp

    return mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "ds_events", "mcp", "--namespace", namespace],
        env=ds_env(home, DS_QUEST_ID=quest_id),
    )  # fmt: skip


def distinct_body(tag: str, i: int) -> str:
    """A memory card body of words unique to ``(tag, i)``: no two are near-duplicates."""
    return " ".join(f"{tag}w{i}x{k}" for k in range(8))


async def write_shared_lesson(client: Any) -> str:
    """Write the lesson every racer of a duplicate-refusal test writes (one may win);
    returns the write's status (``written`` or ``duplicate_candidates``)."""
    r = await client.call_tool("write", {"kind": "knowledge", "title": "Shared lesson: cache tokenizer per vocab",
                                         "body": "rebuild the tokenizer cache whenever the vocabulary changes"})  # fmt: skip
    return r.structured_content["status"]  # type: ignore[no-any-return]


def domain_events(quest: Any) -> int:
    """How many events of the quest's log are not tool-call records (``tool.*``).

    Every MCP call, a refused one included, appends its record; a refusal must leave this
    count (the domain events) unchanged.
    """
    return sum(1 for e in quest.log.read() if not e.type.startswith("tool."))


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition", poll: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)


async def wait_until_async(
    predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition", poll: float = 0.005
) -> Any:
    """:func:`wait_until` for a coroutine: the loop keeps running while it polls."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(poll)


# -- random event sequences ---------------------------------------------------------------
#
# Real event types with payloads drawn from small pools of ids, so later events find the
# records earlier ones made (a reply to a sent interaction, an exit of a started session,
# a delivery of a queued message): the folds take their record-updating paths, not only
# the inserting ones. Every event type in the union has a maker (a test checks it).

_IDS = ("a", "b", "c")


def _pick(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.choice(_IDS)}"


def _text(rng: random.Random) -> str:
    return rng.choice(("", "plain", "two words", "üñí ✓", "line\nbreak"))


def _metrics(rng: random.Random) -> dict[str, float]:
    return {"acc": round(rng.random(), 3), "loss": round(rng.random() * 3, 3)}


_MAKERS: dict[str, Callable[[random.Random, list[str]], Event]] = {
    "quest.created": lambda r, _i: ev.QuestCreated(title=_text(r) or "t", brief=_text(r), tags=[_text(r)]),
    "quest.anchor_changed": lambda r, _i: ev.QuestAnchorChanged(anchor=r.choice(("scout", "idea", "write"))),
    "quest.control": lambda r, _i: ev.QuestControl(action=r.choice(("pause", "stop", "resume"))),
    "quest.completed": lambda r, _i: ev.QuestCompleted(summary=_text(r)),
    "quest.runner_set": lambda r, _i: ev.QuestRunnerSet(runner=r.choice(("", "codex", "claude")), model=r.choice(("", "m1"))),
    "quest.archived": lambda r, _i: ev.QuestArchived(reason=_text(r)),
    "quest.unarchived": lambda r, _i: ev.QuestUnarchived(reason=_text(r)),
    "conversation.message": lambda r, _i: ev.ConversationMessage(
        role=r.choice(("user", "user", "assistant", "system")), content=_text(r), source=r.choice(("cli", "web"))
    ),
    "log.recovered": lambda r, _i: ev.LogRecovered(reason="torn", offset=r.randrange(999), length=3, quarantine_path="q"),
    "log.repaired": lambda r, _i: ev.LogRepaired(removed_lines=[r.randrange(9)], removed_bytes=5, quarantine_path="q"),
    "memory.card_written": lambda r, _i: evm.CardWritten(
        card_id=_pick(r, "card"), kind=r.choice(("papers", "ideas")), title=_text(r) or "t", body=_text(r),
        tags=[_text(r)], metadata={"k": r.randrange(3)}, supersedes=r.choice((None, _pick(r, "card"))),
        record_id=r.choice(("", "mem-001")), record_type=r.choice(("", "note")),
    ),
    "memory.card_superseded": lambda r, _i: evm.CardSuperseded(card_id=_pick(r, "card"), by_card_id=_pick(r, "card")),
    "memory.card_promoted": lambda r, _i: evm.CardPromoted(
        card_id=_pick(r, "card"), global_card_id=_pick(r, "card"), source_quest="q1"
    ),
    "memory.card_imported": lambda r, _i: evm.CardImported(
        card_id=_pick(r, "card"), kind="papers", title="edited", body=_text(r), tags=["x"], metadata={"m": 1},
        content=r.choice(("", "---\nid: x\n---\nhand edit\n")),
    ),
    "memory.guard_configured": lambda r, _i: evm.GuardConfigured(config_keys=[r.choice(("lr", "seed"))]),
    "bash.session_started": lambda r, _i: evb.BashSessionStarted(
        session_id=_pick(r, "sess"), command="sleep 300", workdir=".", env_keys=["A"], pid=100, pgid=100,
        monitor_pid=99, start_time=r.randrange(9999), boot_id="boot", log_path="log", idempotency_key=r.choice((None, "k1", "k2")),
    ),
    "bash.progress": lambda r, _i: evb.BashProgress(session_id=_pick(r, "sess"), line=r.randrange(50), data={"p": r.random()}),
    "bash.kill_requested": lambda r, _i: evb.BashKillRequested(session_id=_pick(r, "sess"), force=r.random() < 0.5),
    "bash.session_exited": lambda r, _i: evb.BashSessionExited(
        session_id=_pick(r, "sess"), status=r.choice(("completed", "failed", "terminated")), exit_code=r.randrange(3)
    ),
    "bash.session_lost": lambda r, _i: evb.BashSessionLost(session_id=_pick(r, "sess")),
    "artifact.recorded": lambda r, _i: eva.ArtifactRecorded(
        artifact_id=_pick(r, "art"), kind=r.choice(("idea", "decision", "run", "milestone")),
        payload={"note": _text(r), "action": "continue", "reason": _text(r)},  # a decision has an action
    ),
    "git.checkpointed": lambda r, _i: eva.GitCheckpointed(
        sha=f"{r.getrandbits(40):010x}", message=_text(r), branch=r.choice(("main", "idea-a")), skipped=[{"path": "x"}]
    ),
    "git.branch_prepared": lambda r, _i: eva.BranchPrepared(
        branch=r.choice(("idea-a", "run-b")), branch_kind="idea", start_sha="abc", worktree=".ds/worktrees/w",
        activate=r.random() < 0.5,
    ),
    "artifact.baseline_published": lambda r, _i: eva.BaselinePublished(
        baseline_id=_pick(r, "base"), payload={"p": 1}, variant_ids=["v1"]
    ),
    "artifact.baseline_attached": lambda r, _i: eva.BaselineAttached(baseline_id=_pick(r, "base"), variant_id="v1"),
    "artifact.baseline_confirmed": lambda r, _i: eva.BaselineConfirmed(
        baseline_id=_pick(r, "base"), baseline_path="baselines/b", contract_path="baselines/b/json/metric_contract.json",
        contract={"metrics": ["acc"]}, metrics_summary=_metrics(r), primary_metric="acc",
        metric_directions={"acc": "higher"},
    ),
    "artifact.main_experiment_recorded": lambda r, _i: eva.MainExperimentRecorded(
        run=_pick(r, "run"), title="run", baseline_id=_pick(r, "base"), metrics_summary=_metrics(r),
        comparisons={"acc": {"delta": r.random()}}, primary_metric="acc",
    ),
    "artifact.analysis_campaign_created": lambda r, _i: eva.AnalysisCampaignCreated(
        campaign_id=_pick(r, "camp"), title="c", goal="g", parent_run=None, parent_branch="main", parent_sha="abc",
        slices=[
            {"slice_id": s, "title": s, "goal": "g", "branch": f"analysis-{s}", "worktree": None} for s in ("s1", "s2")
        ],
    ),
    "artifact.analysis_slice_recorded": lambda r, _i: eva.AnalysisSliceRecorded(
        campaign_id=_pick(r, "camp"), slice_id=r.choice(("s1", "s2", "s3")), status=r.choice(("completed", "failed")),
        metrics_summary=_metrics(r), summary=_text(r),
    ),
    "artifact.summary_refreshed": lambda r, _i: eva.SummaryRefreshed(reason=_text(r)),
    "git.graph_rendered": lambda r, _i: eva.GitGraphRendered(graph={"nodes": [r.randrange(5)], "edges": []}),
    "artifact.baseline_waived": lambda r, _i: eva.BaselineWaived(reason=_text(r) or "no baseline exists", comment=_text(r)),
    "registry.baseline_published": lambda r, _i: eva.RegistryBaselinePublished(
        baseline_id=_pick(r, "base"), payload={"title": _text(r)}, variant_ids=["v1"], source_quest="q1"
    ),
    "interaction.sent": lambda r, _i: evi.InteractionSent(
        interaction_id=_pick(r, "int"), kind=r.choice(("progress", "decision_request", "answer")), message=_text(r),
        reply_mode=r.choice(("none", "threaded", "blocking")), options=[{"id": "yes", "label": "Yes"}],
        dedupe_key=r.choice((None, "k")), fingerprint=r.choice(("", "fp")), targets=["local", _pick(r, "bind")],
    ),
    "interaction.replied": lambda r, _i: evi.InteractionReplied(
        interaction_id=_pick(r, "int"), text=_text(r), option_id=r.choice((None, "yes")), source="cli"
    ),
    "mailbox.delivered": lambda r, inbound: evi.MailboxDelivered(
        batch_id=f"batch-{r.randrange(99)}", message_ids=r.sample(inbound, min(len(inbound), r.randrange(1, 4)))
    ),
    "delivery.binding_added": lambda r, _i: evi.ConnectorBound(
        binding_id=_pick(r, "bind"), connector="webhook", target="http://127.0.0.1:9/x", primary=r.random() < 0.5,
        settings={"retries": 2},
    ),
    "delivery.binding_removed": lambda r, _i: evi.ConnectorUnbound(binding_id=r.choice(("local", _pick(r, "bind")))),
    "delivery.routing_policy_changed": lambda r, _i: evi.RoutingPolicyChanged(
        policy=r.choice(("fanout_all", "primary_only", "primary_plus_local"))
    ),
    "delivery.attempted": lambda r, _i: evi.DeliveryAttempted(
        interaction_id=_pick(r, "int"), binding_id=_pick(r, "bind"), connector="webhook", attempt=r.randrange(1, 4),
        outcome=r.choice(("delivered", "retrying", "failed")), status_code=r.choice((None, 200, 500)),
    ),
    "tool.call_started": lambda r, _i: evt.ToolCallStarted(
        call_id=_pick(r, "tc"), namespace="bash_exec", tool="bash_exec", arguments={"command": _text(r)}
    ),
    "tool.call_finished": lambda r, _i: evt.ToolCallFinished(
        call_id=_pick(r, "tc"), namespace=r.choice(("memory", "artifact")), tool="write",
        status=r.choice(("ok", "error")), arguments={"title": _text(r)}, result={"n": r.randrange(3)},
        error_code=r.choice(("", "invalid_argument")), duration_ms=round(r.random() * 10, 3),
    ),
    "runner.turn_started": lambda r, inbound: evr.TurnStarted(
        run_id=_pick(r, "run"), runner=r.choice(("codex", "scripted")), skill=r.choice(("scout", "decision")),
        attempt=r.randrange(1, 3), retry_of=r.choice((None, _pick(r, "run"))), message_ids=inbound[-1:],
        host="h", host_pid=r.randrange(2, 999),
    ),
    "runner.process_started": lambda r, _i: evr.RunnerProcessStarted(
        run_id=_pick(r, "run"), pid=r.randrange(2, 999), pgid=r.randrange(2, 999), command=["agent"]
    ),
    "runner.agent_message": lambda r, _i: evr.AgentMessage(run_id=_pick(r, "run"), text=_text(r)),
    "runner.reasoning": lambda r, _i: evr.Reasoning(run_id=_pick(r, "run"), text=_text(r)),
    "runner.tool_call": lambda r, _i: evr.RunnerToolCall(
        run_id=_pick(r, "run"), call_id=_pick(r, "c"), tool="memory.write", arguments={"t": _text(r)}
    ),
    "runner.tool_result": lambda r, _i: evr.RunnerToolResult(
        run_id=_pick(r, "run"), call_id=_pick(r, "c"), status=r.choice(("ok", "error")), output={"n": 1}
    ),
    "runner.turn_finished": lambda r, _i: evr.TurnFinished(
        run_id=_pick(r, "run"), outcome=r.choice(evr.TURN_OUTCOMES), usage={"input_tokens": r.randrange(99)}
    ),
    "runner.turn_retry_scheduled": lambda r, _i: evr.TurnRetryScheduled(
        run_id=_pick(r, "run"), attempt=r.randrange(2, 4), delay_s=1.0,
        failure=r.choice((None, evr.TurnFailure(failure_class="transient", cause="provider_5xx"))), max_attempts=r.randrange(0, 4),
    ),
    "runner.turn_held": lambda r, _i: evr.TurnHeld(
        run_id=_pick(r, "run"), attempt=r.randrange(1, 4), max_attempts=3, reason=_text(r),
        failure=evr.TurnFailure(failure_class="deterministic", cause="refused_call", tool="artifact.record", call_id=_pick(r, "c"),
                                error="invalid_metrics"),
    ),
    "artifact.paper_added": lambda r, _i: eva.PaperAdded(
        paper_id=r.choice(("1512.03385", "2401.01234v2")), title=_text(r) or "t", authors=[_text(r)], abstract=_text(r)
    ),
    "paper.outline_submitted": lambda r, _i: evp.OutlineSubmitted(
        mode=r.choice(("candidate", "select", "revise")),
        outline=evp.PaperOutline(outline_id=_pick(r, "outline"), title=_text(r) or "t", story=_text(r)),
        paper_branch=r.choice((None, "paper/q-outline-1")), reason=_text(r),
    ),
    "paper.writing_plan_compiled": lambda r, _i: evp.WritingPlanCompiled(
        outline_id=_pick(r, "outline"), validation_ok=r.choice((True, False)),
        jobs=[evp.WritingJob(job_id="job-1", section="introduction", source="story", write_when="first")],
    ),
    "paper.bundle_submitted": lambda r, _i: evp.PaperBundleSubmitted(
        bundle_id=_pick(r, "bundle"), title=_text(r) or "t", package_type=r.choice(("draft_checkpoint", "submission_package")),
        outline_id=r.choice((None, _pick(r, "outline"))), paper_branch=r.choice((None, "paper/q-outline-1")),
        files=[evp.BundleFile(role="draft", path="paper/draft.md", sha256="0" * 64, bytes=r.randrange(99))],
        manuscript_paths=["paper/draft.md"],
    ),
    "research.idea_submitted": lambda r, _i: evre.IdeaSubmitted(
        idea_id=_pick(r, "idea"), title=_text(r) or "idea", mode=r.choice(("create", "revise")),
        submission_mode=r.choice(("line", "candidate")), branch=r.choice((None, f"idea/q-{_pick(r, 'idea')}")),
        branch_no=r.choice((None, "001", "002")), parent_branch="main", lineage_intent=r.choice((None, "continue_line")),
        foundation_ref={"kind": "branch", "ref": "main", "branch": "main"}, hypothesis=_text(r), risks=[_text(r)],
        draft_markdown=r.choice(("", "# draft\n")),
    ),
    "research.branch_activated": lambda r, _i: evre.BranchActivated(
        branch=r.choice(("main", f"idea/q-{_pick(r, 'idea')}")), worktree=r.choice((None, ".ds/worktrees/x")),
        idea_id=r.choice((None, _pick(r, "idea"))), anchor=r.choice(("", "experiment")), promote_to_head=r.random() < 0.5,
    ),
    "interaction.superseded": lambda r, _i: evi.InteractionSuperseded(
        interaction_id=_pick(r, "int"), superseded_by=_pick(r, "int")
    ),
}
EVENT_TAGS_MADE = frozenset(_MAKERS)


def event_payloads(seed: int, count: int) -> list[Event]:
    """``count`` events of random real types as a service would emit them (no envelope):
    the same ``seed`` gives the same events. They start with ``quest.created``."""
    rng = random.Random(seed)
    tags = sorted(_MAKERS)
    out: list[Event] = [ev.QuestCreated(title="Random quest", brief="made by a seeded generator")]
    inbound: list[str] = []  # ids of queued messages and replies (what mailbox.delivered names)
    for n in range(count - 1):
        event = _MAKERS[rng.choice(tags)](rng, inbound or ["none"])
        # The log mints ids; here a deterministic one, so inbound items can be named.
        event = msgspec.structs.replace(event, id=f"{seed:08x}{n:08x}")
        if isinstance(event, (ev.ConversationMessage, evi.InteractionReplied)):
            inbound.append(event.id)
        out.append(event)
    return out


def random_events(seed: int, count: int, quest_id: str = "q1") -> list[Event]:
    """:func:`event_payloads` with the envelope a log would give them (seq 1.., ts, id)."""
    return [
        msgspec.structs.replace(
            e, seq=n, id=e.id or f"{seed:08x}-{n:08x}", ts=f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000000Z",
            quest_id=quest_id, actor="test",
        )
        for n, e in enumerate(event_payloads(seed, count), start=1)
    ]


def start_serve(home: Home, *extra: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``ds serve --port 0 *extra`` over ``home``; its output goes to ``log``.
    Returns the process and the port, once it listens."""
    out = log.open("wb")
    proc = subprocess.Popen([*DS, "serve", "--port", "0", *extra], env=ds_env(home, DS_TOKEN=""), stdout=out, stderr=subprocess.STDOUT)
    out.close()  # the child holds its own copy

    def bound() -> str | None:
        if proc.poll() is not None:
            raise AssertionError(f"ds serve exited ({proc.returncode}):\n{log.read_text()}")
        # The first complete "serving" line (log lines on stderr may come before it).
        lines = log.read_text().split("\n")[:-1]
        return next((line for line in lines if line.startswith("serving")), None)

    line = wait_until(bound, timeout=60, what="ds serve to listen", poll=0.05)
    return proc, int(line.rsplit(":", 1)[1].split()[0])
