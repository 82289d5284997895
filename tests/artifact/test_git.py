"""prepare_branch, checkpoint and render_git_graph through an MCP client, against the
quest's real git repository, checked with the git CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ds_events.events.artifact import BranchPrepared, GitCheckpointed
from ds_events.home import Home, Quest
from tests.helpers import domain_events

from .support import client_for, fails, git, git_ok, ok, set_config


async def test_prepare_branch_creates_a_run_branch_with_a_worktree_that_git_lists(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        r = await ok(c, "prepare_branch", run_id="ls-0.1", idea_id="idea-0001")
    assert r["branch"] == "run/ls-0.1" and r["worktree"] == ".ds/worktrees/run__ls-0.1" and r["active"]
    main_head = git_ok(quest.root, "rev-parse", "main").strip()
    assert r["start_sha"] == main_head and r["start_point"] == "main"
    assert git_ok(quest.root, "rev-parse", "run/ls-0.1").strip() == main_head
    listed = git_ok(quest.root, "worktree", "list", "--porcelain")
    assert f"worktree {quest.root / '.ds/worktrees/run__ls-0.1'}" in listed
    assert "branch refs/heads/run/ls-0.1" in listed
    assert (quest.root / ".ds/worktrees/run__ls-0.1/SUMMARY.md").is_file()  # checked out
    [event] = quest.log.read(types=["git.branch_prepared"])
    assert isinstance(event, BranchPrepared) and event.run == "ls-0.1" and event.idea_id == "idea-0001"
    assert quest.state("artifacts").active_branch == "run/ls-0.1"
    assert git(quest.root, "fsck", "--strict").returncode == 0


async def test_branch_names_follow_the_scheme_for_each_kind(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        idea = await ok(c, "prepare_branch", idea_id="idea-0002", branch_kind="idea", create_worktree=False)
        analysis = await ok(c, "prepare_branch", idea_id="idea-0002", run_id="abl", branch_kind="analysis", create_worktree=False)
        paper = await ok(c, "prepare_branch", run_id="main-run", branch_kind="paper", create_worktree=False)
        explicit = await ok(c, "prepare_branch", branch="paper/final-draft", branch_kind="paper", create_worktree=False)
    assert [idea["branch"], analysis["branch"], paper["branch"], explicit["branch"]] == [
        "idea/q1-idea-0002", "analysis/idea-0002/abl", "paper/main-run", "paper/final-draft",
    ]
    assert idea["worktree"] is None and not idea["active"]
    branches = git_ok(quest.root, "branch", "--format=%(refname:short)").split()
    assert set(branches) == {"main", "idea/q1-idea-0002", "analysis/idea-0002/abl", "paper/main-run", "paper/final-draft"}
    assert git_ok(quest.root, "worktree", "list").count("\n") == 1  # no worktrees were asked for


@pytest.mark.parametrize(
    "args, code",
    [
        ({"branch": "run/a..b"}, "invalid_branch_name"),
        ({"branch": "run/has space"}, "invalid_branch_name"),
        ({"branch": "run/x.lock"}, "invalid_branch_name"),
        ({"branch": "run/-flag"}, "invalid_branch_name"),
        ({"branch": "idea/not-a-run"}, "invalid_branch_name"),  # the prefix must match branch_kind
        ({"branch": "main"}, "invalid_branch_name"),
        ({"run_id": "../../etc"}, "invalid_id"),
        ({"run_id": "a/b"}, "invalid_id"),
        ({"branch_kind": "hotfix", "run_id": "r"}, "invalid_branch_kind"),
        ({"branch_kind": "run"}, "missing_fields"),
        ({"branch_kind": "idea", "run_id": "r"}, "missing_fields"),
        ({"run_id": "r", "start_point": "no-such-branch"}, "unknown_start_point"),
        ({"run_id": "r", "start_point": "deadbeef" * 5}, "unknown_start_point"),
    ],
)
async def test_bad_prepare_branch_input_is_refused_and_creates_nothing(home: Home, quest: Quest, args: dict, code: str) -> None:
    before_refs = git_ok(quest.root, "for-each-ref")
    seq = domain_events(quest)
    async with client_for(home) as c:
        await fails(c, "prepare_branch", code, **args)
    assert git_ok(quest.root, "for-each-ref") == before_refs
    assert not (quest.root / ".ds/worktrees").exists()
    assert domain_events(quest) == seq


async def test_an_existing_branch_or_a_clashing_name_is_refused(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        err = await fails(c, "prepare_branch", "branch_exists", run_id="r1")
        assert err["branch"] == "run/r1"
        # run/r1/x cannot coexist with run/r1 in git's ref store
        await fails(c, "prepare_branch", "branch_exists", branch="run/r1/x")
    assert len(quest.log.read(types=["git.branch_prepared"])) == 1


async def test_a_start_point_may_be_a_commit_sha(home: Home, quest: Quest) -> None:
    first = git_ok(quest.root, "rev-parse", "main").strip()
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        (quest.root / ".ds/worktrees/run__r1/code.py").write_text("x = 1\n")
        await ok(c, "checkpoint", message="code")
        r = await ok(c, "prepare_branch", run_id="r2", start_point=first)
        r3 = await ok(c, "prepare_branch", run_id="r3")  # default: the active branch (run/r2)
    assert r["start_sha"] == first
    assert r3["start_point"] == "run/r2" and r3["start_sha"] == first
    assert not (quest.root / ".ds/worktrees/run__r2/code.py").exists()


async def test_checkpoint_commits_the_active_worktree_and_git_fsck_is_clean(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        wt = quest.root / ".ds/worktrees/run__r1"
        (wt / "src").mkdir()
        (wt / "src/train.py").write_text("print('train')\n")
        r = await ok(c, "checkpoint", message="training loop")
    assert r["branch"] == "run/r1" and r["worktree"] == ".ds/worktrees/run__r1"
    assert git_ok(quest.root, "rev-parse", "run/r1").strip() == r["sha"]
    assert git_ok(quest.root, "log", "-1", "--format=%s", "run/r1").strip() == "training loop"
    assert "src/train.py" in git_ok(quest.root, "ls-tree", "-r", "--name-only", "run/r1").split()
    assert git_ok(wt, "status", "--porcelain") == ""  # the worktree's index matches the commit
    assert git(quest.root, "fsck", "--strict").returncode == 0
    [event] = quest.log.read(types=["git.checkpointed"])
    assert isinstance(event, GitCheckpointed) and event.sha == r["sha"] and event.parent == r["parent"]
    assert quest.state("artifacts").branches["run/r1"].head_sha == r["sha"]


async def test_a_checkpoint_skips_a_200_mb_file_a_venv_and_caches_and_reports_them(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        wt = quest.root / ".ds/worktrees/run__r1"
        with open(wt / "checkpoint.pt", "wb") as f:
            f.truncate(200 * 1024 * 1024)  # sparse: fast to make, still 200 MB to git
        (wt / "env/bin").mkdir(parents=True)
        (wt / "env/pyvenv.cfg").write_text("home = /usr/bin\n")
        (wt / "env/bin/python").write_text("#!/bin/sh\n")
        (wt / "tools/bin").mkdir(parents=True)  # a venv found by bin/activate alone
        (wt / "tools/bin/activate").write_text("# activate\n")
        (wt / "node_modules/x").mkdir(parents=True)
        (wt / "node_modules/x/index.js").write_text("1\n")
        (wt / "pkg/__pycache__").mkdir(parents=True)
        (wt / "pkg/__pycache__/m.cpython-311.pyc").write_bytes(b"\0")
        (wt / "pkg/mod.pyc").write_bytes(b"\0")
        (wt / "pkg/mod.py").write_text("y = 2\n")
        (wt / "data/clone").mkdir(parents=True)
        git_ok(wt / "data/clone", "init", "-q")
        r = await ok(c, "checkpoint", message="code, not weights")
    skipped = {s["path"]: s for s in r["skipped"]}
    assert skipped["checkpoint.pt"] == {"path": "checkpoint.pt", "reason": "too_large", "size": 200 * 1024 * 1024}
    assert skipped["env/"]["reason"] == "virtualenv" and skipped["tools/"]["reason"] == "virtualenv"
    assert skipped["node_modules/"]["reason"] == "cache" and skipped["pkg/__pycache__/"]["reason"] == "cache"
    assert skipped["pkg/mod.pyc"]["reason"] == "cache"
    assert skipped["data/clone/"]["reason"] == "nested_repository"
    assert r["skipped_total"] == len(r["skipped"]) == 7
    tree = git_ok(quest.root, "ls-tree", "-r", "--name-only", r["sha"]).split()
    assert "pkg/mod.py" in tree
    assert not [p for p in tree if p.startswith(("env/", "tools/", "node_modules/", "data/")) or p.endswith((".pt", ".pyc"))]
    [event] = quest.log.read(types=["git.checkpointed"])
    assert event.skipped == r["skipped"]
    # no 200 MB blob was ever written to the object store
    assert int(git_ok(quest.root, "count-objects", "-v").split("size: ")[1].split()[0]) < 10_000
    assert git(quest.root, "fsck", "--strict").returncode == 0


async def test_the_size_limit_comes_from_config(home: Home, quest: Quest) -> None:
    set_config(home, "git", max_file_bytes=1000)
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        wt = quest.root / ".ds/worktrees/run__r1"
        (wt / "small.txt").write_bytes(b"a" * 1000)
        (wt / "big.txt").write_bytes(b"a" * 1001)
        r = await ok(c, "checkpoint", message="limit")
    assert [s["path"] for s in r["skipped"]] == ["big.txt"]
    assert "small.txt" in git_ok(quest.root, "ls-tree", "--name-only", r["sha"]).split()


async def test_checkpoint_of_the_quest_root_never_commits_the_ds_area(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "record", payload={"kind": "idea", "title": "Label smoothing"})
        (quest.root / "notes.md").write_text("notes\n")
        r = await ok(c, "checkpoint", message="notes and idea")
    assert r["branch"] == "main" and r["worktree"] is None
    assert {"path": ".ds/", "reason": "ds_working_area"} in r["skipped"]
    tree = git_ok(quest.root, "ls-tree", "-r", "--name-only", "main").split()
    assert "notes.md" in tree and "artifacts/ideas/idea-0001.json" in tree
    assert not [p for p in tree if p.startswith(".ds/")]


async def test_nothing_to_commit_is_refused_unless_allow_empty(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        seq = domain_events(quest)
        head = git_ok(quest.root, "rev-parse", "run/r1").strip()
        err = await fails(c, "checkpoint", "nothing_to_commit", message="again")
        assert err["head"] == head and domain_events(quest) == seq
        assert git_ok(quest.root, "rev-parse", "run/r1").strip() == head
        r = await ok(c, "checkpoint", message="marker", allow_empty=True)
    assert git_ok(quest.root, "rev-parse", "run/r1^").strip() == head and r["sha"] != head


async def test_checkpoint_errors_for_unknown_worktreeless_and_missing_targets(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await fails(c, "checkpoint", "missing_fields", message="  ")
        await fails(c, "checkpoint", "unknown_branch", message="m", branch="run/nope")
        await ok(c, "prepare_branch", run_id="bare", create_worktree=False)
        await fails(c, "checkpoint", "branch_has_no_worktree", message="m", branch="run/bare")
        await ok(c, "prepare_branch", run_id="gone")
        wt = quest.root / ".ds/worktrees/run__gone"
        for p in sorted(wt.rglob("*"), reverse=True):
            p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()
        wt.rmdir()
        await fails(c, "checkpoint", "worktree_missing", message="m")
    assert quest.log.read(types=["git.checkpointed"]) == []


async def test_checkpoint_keeps_gitignored_files_out_but_commits_symlinks(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        wt = quest.root / ".ds/worktrees/run__r1"
        (wt / ".gitignore").write_text((wt / ".gitignore").read_text() + "outputs/\n")
        (wt / "outputs").mkdir()
        (wt / "outputs/log.txt").write_text("x\n")
        (wt / "real.txt").write_text("r\n")
        os.symlink("real.txt", wt / "link.txt")
        r = await ok(c, "checkpoint", message="ignore outputs")
    tree = git_ok(quest.root, "ls-tree", "-r", "run/r1").splitlines()
    names = {line.split("\t")[1]: line.split()[0] for line in tree}
    assert "outputs/log.txt" not in names and names["link.txt"] == "120000"
    assert all(s["path"] != "outputs/" for s in r["skipped"])  # ignored quietly, as git does


async def test_render_git_graph_returns_json_and_svg_and_materialises_both(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        (quest.root / ".ds/worktrees/run__r1/a.txt").write_text("a\n")
        cp = await ok(c, "checkpoint", message="work on r1")
        r = await ok(c, "render_git_graph")
        await fails(c, "render_git_graph", "invalid_field", max_commits=0)
    graph = r["graph"]
    by_name = {b["name"]: b for b in graph["branches"]}
    assert list(by_name) == ["main", "run/r1"]
    assert by_name["run/r1"]["head"] == cp["sha"] and by_name["run/r1"]["kind"] == "run"
    assert by_name["run/r1"]["merge_base_with_main"] == git_ok(quest.root, "merge-base", "main", "run/r1").strip()
    commits = {c_["sha"]: c_ for c_ in graph["commits"]}
    assert commits[cp["sha"]]["lane"] == "run/r1" and commits[cp["sha"]]["parents"] == [cp["parent"]]
    assert r["svg"].startswith("<svg") and "run/r1" in r["svg"]
    # DeepScientist's callers read graph.json_path / graph.svg_path: the files, absolute.
    assert graph.pop("json_path") == str(quest.root / r["json_path"]) and graph.pop("svg_path") == str(quest.root / r["svg_path"])
    assert json.loads((quest.root / r["json_path"]).read_text()) == graph
    assert (quest.root / r["svg_path"]).read_text() == r["svg"]


def test_worktrees_live_under_the_ds_area_which_the_quest_gitignore_covers(quest: Quest) -> None:
    from ds_events.services.artifacts import checkpoints as git_service, commands as cmd

    r = git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1"))
    assert Path(r.worktree_path).is_relative_to(quest.root / ".ds" / "worktrees")
    assert git(quest.root, "check-ignore", "-q", r.worktree).returncode == 0


async def test_a_later_checkpoint_records_edits_deletions_and_files_grown_past_the_limit(home: Home, quest: Quest) -> None:
    set_config(home, "git", max_file_bytes=100)
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        wt = quest.root / ".ds/worktrees/run__r1"
        for name in ("keep.txt", "edit.txt", "gone.txt", "grow.txt"):
            (wt / name).write_text(name)
        await ok(c, "checkpoint", message="four files")
        (wt / "edit.txt").write_text("edited")
        (wt / "gone.txt").unlink()
        (wt / "grow.txt").write_text("x" * 101)
        r = await ok(c, "checkpoint", message="edit, delete, grow")
    files = set(git_ok(quest.root, "ls-tree", "--name-only", r["sha"]).split())
    assert {"keep.txt", "edit.txt"} <= files and not {"gone.txt", "grow.txt"} & files
    assert git_ok(quest.root, "show", f"{r['sha']}:edit.txt") == "edited"
    assert {"path": "grow.txt", "reason": "too_large", "size": 101} in r["skipped"]
    assert git_ok(quest.root, "diff", "--name-status", r["parent"], r["sha"]).split() == ["M", "edit.txt", "D", "gone.txt", "D", "grow.txt"]
