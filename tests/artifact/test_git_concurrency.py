"""Branches, worktrees and campaign ids are made outside the log's lock and stay correct
when several processes make them at once: distinct campaign ids for campaigns created
together, exactly one winner (and a clean ``branch_exists`` for the others) for one
branch name, never a half-made state. Real processes, started together on a signal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ds_events.events.artifact import AnalysisCampaignCreated, BranchPrepared
from ds_events.home import Home, Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import commands as cmd

from .support import git, git_ok

REPO = Path(__file__).resolve().parents[2]

# Opens the quest, says "ready", waits for "go", runs one command, prints its outcome.
_WORKER = r"""
import json, sys
from ds_events.errors import ServiceError
from ds_events.home import Home
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git
from ds_events.services.artifacts import commands as cmd
home_root, what, arg = sys.argv[1:4]
quest = Home(home_root).open_quest("q1", actor="worker")
print("ready", flush=True)
sys.stdin.readline()
try:
    if what == "campaign":
        r = artifacts.create_analysis_campaign(quest, cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a", "b"]))
        out = {"ok": r.campaign_id, "branches": [s.branch for s in r.slices]}
    else:
        out = {"ok": git.prepare_branch(quest, cmd.PrepareBranch(run_id=arg)).branch}
except ServiceError as exc:
    out = {"error": exc.code, "message": exc.message}
print(json.dumps(out), flush=True)
quest.close()
"""


def run_together(home: Home, jobs: list[tuple[str, str]]) -> list[dict]:
    """Start one process per ``(what, arg)``, let them all go at once, return outcomes."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(home.root), what, arg],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for what, arg in jobs
    ]  # fmt: skip
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready", p.stderr.read() if p.stderr else ""
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outcomes = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outcomes.append(json.loads(out))
    return outcomes


def no_reservations(quest: Quest) -> bool:
    return git_ok(quest.root, "for-each-ref", "refs/ds/").strip() == ""


@pytest.mark.slow
def test_campaigns_created_by_four_processes_at_once_get_distinct_ids_and_all_their_branches(home: Home, quest: Quest) -> None:
    main = git_ok(quest.root, "rev-parse", "main").strip()
    outcomes = run_together(home, [("campaign", "")] * 4) + run_together(home, [("campaign", "")] * 4)
    assert all("ok" in o for o in outcomes), [o for o in outcomes if "ok" not in o]
    ids = sorted(o["ok"] for o in outcomes)
    assert ids == [f"campaign-{n:03d}" for n in range(1, 9)]
    events = [e for e in quest.log.read(types=["artifact.analysis_campaign_created"]) if isinstance(e, AnalysisCampaignCreated)]
    assert sorted(e.campaign_id for e in events) == ids
    for o in outcomes:  # each campaign's branches exist, at the parent, each with its worktree
        for branch in o["branches"]:
            assert git_ok(quest.root, "rev-parse", branch).strip() == main
            assert (quest.root / ".ds/worktrees" / branch.replace("/", "__") / ".git").exists()
    assert len(git_ok(quest.root, "worktree", "list").splitlines()) == 1 + 16
    assert no_reservations(quest)
    assert git(quest.root, "fsck", "--strict").returncode == 0


@pytest.mark.slow
def test_four_processes_preparing_one_branch_at_once_make_it_once_and_the_others_get_branch_exists(home: Home, quest: Quest) -> None:
    outcomes = run_together(home, [("branch", "same")] * 4)
    assert sorted(o.get("ok") or o["error"] for o in outcomes) == ["branch_exists"] * 3 + ["run/same"], outcomes
    events = [e for e in quest.log.read(types=["git.branch_prepared"]) if isinstance(e, BranchPrepared)]
    assert [e.branch for e in events] == ["run/same"]
    listed = git_ok(quest.root, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 2 and "branch refs/heads/run/same" in listed
    assert sorted(os.listdir(quest.root / ".ds/worktrees")) == ["run__same"]
    assert git(quest.root, "fsck", "--strict").returncode == 0


@pytest.mark.slow
def test_processes_preparing_different_branches_at_once_all_succeed(home: Home, quest: Quest) -> None:
    outcomes = run_together(home, [("branch", f"r{i}") for i in range(4)])
    assert sorted(o.get("ok", "") for o in outcomes) == [f"run/r{i}" for i in range(4)], outcomes
    assert sorted(os.listdir(quest.root / ".ds/worktrees")) == [f"run__r{i}" for i in range(4)]


def test_a_reservation_left_by_a_killed_process_only_skips_its_campaign_id(quest: Quest) -> None:
    main = git_ok(quest.root, "rev-parse", "main").strip()
    git_ok(quest.root, "update-ref", "refs/ds/reserved/campaign-001", main)  # as a kill -9 would leave it
    r = artifacts.create_analysis_campaign(quest, cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a"]))
    assert r.campaign_id == "campaign-002"
    assert git_ok(quest.root, "for-each-ref", "--format=%(refname)", "refs/ds/").split() == ["refs/ds/reserved/campaign-001"]


def test_when_every_campaign_id_is_held_the_campaign_is_refused_and_creates_nothing(quest: Quest) -> None:
    main = git_ok(quest.root, "rev-parse", "main").strip()
    stale = "".join(f"create refs/ds/reserved/campaign-{n:03d} {main}\n" for n in range(1, 1001))
    subprocess.run(["git", "-C", str(quest.root), "update-ref", "--stdin"], input=stale, text=True, check=True)
    seq = quest.log.last_seq
    from ds_events.errors import Conflict

    with pytest.raises(Conflict) as caught:
        artifacts.create_analysis_campaign(quest, cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a"]))
    assert caught.value.code == "campaign_ids_exhausted" and "refs/ds/reserved" in caught.value.message
    assert quest.log.last_seq == seq
    assert not any(b.startswith("analysis/") for b in git_ok(quest.root, "branch", "--format=%(refname:short)").split())
