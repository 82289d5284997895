"""The crash matrix's machinery: one case is a real quest, a real host killed -9 at a
named point (``DS_CRASH_AT``), a restarted host, and the checks of what is left.

:func:`run_case` never asserts: it returns an :class:`Outcome` whose ``problems`` list
says every invariant that failed, so the whole matrix can be tabulated
(:func:`table`) and each test asserts only its own row.

What "duplicated" means here, precisely:

- a message is *delivered* when a ``mailbox.delivered`` event names it: every queued
  message is delivered exactly once (one event names it; none is left pending);
- a message is *presented* to a turn when that turn's ``runner.turn_started`` lists it
  (its prompt carries it as the current request). A retry presents its failed attempt's
  messages again — same turn number, by design — but two different turns (numbers)
  never present the same message: a continuation of a crashed turn shows the crashed
  turn's messages under "Recent conversation", not as new requests (so none is lost
  either, even when the crashed turn's agent never read its prompt: every message is in
  the newest turn's prompt);
- a bash session is duplicated when two ``bash.session_started`` carry the same command;
- a commit is duplicated when two checkpoint commits of the quest repository make the
  same change (the same paths to the same blobs): a retried step that checkpoints again
  after its first answer was lost commits only what changed since (SUMMARY.md's health
  line), which is not the same work twice; a commit the log does not record (no
  ``git.checkpointed`` with its sha) is an orphan commit, also a problem;
- the bash job carries an idempotency key, as a model retrying a step should, so the
  retry of a turn whose server died after recording the session gets that session back.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from ds_events.bash import procs
from ds_events.home import Home
from ds_events.services import quest as quest_service

__all__ = ["Case", "Outcome", "run_case", "table", "SCRIPTS"]

DS = [sys.executable, "-m", "ds_events"]
CHECKPOINT_MESSAGE = "crash matrix: results"
JOB = "mkdir -p results && echo 42 > results/out.txt && echo '__DS_PROGRESS__ {\\\"n\\\": 42}'"
WAIT = 120.0  # the longest any one process of a case may take (a loaded machine is slow)

_WORK = f"""
      - think: "Note it, run the job, checkpoint, record."
      - say: "Starting the work."
      - call: memory.write
        args: {{kind: knowledge, title: "Crash matrix note", body: "written once by the turn"}}
      - call: bash_exec.bash_exec
        args: {{command: "{JOB}", mode: detach, timeout_seconds: 60, idempotency_key: crash-matrix-job}}
        save: job
      - call: bash_exec.bash_exec
        args: {{mode: await, id: "{{{{job.id}}}}", wait_timeout_seconds: 60}}
      - call: artifact.checkpoint
        args: {{message: "{CHECKPOINT_MESSAGE}"}}
      - call: artifact.interact
        args: {{message: "The job wrote results/out.txt.", kind: progress}}
      - call: artifact.record
        args: {{payload: {{kind: decision, verdict: "done", action: continue, next_anchor: write, reason: "the job ran"}}}}
      - say: "Work done."
"""
SCRIPTS = {
    # one turn of real work through the three MCP servers; a continuation finds nothing left
    "work": "turns:\n  - name: work\n    steps:" + _WORK,
    # the same, after a first attempt that fails at once (a retry is scheduled, then run)
    "retry": (
        'turns:\n  - name: work\n    steps:\n      - say: "Trying the provider first."\n'
        '      - fail: "provider unreachable: connection refused"\n        attempts: 1' + _WORK
    ),
    # a turn that waits for the user's answer, printing nothing: the stall watch (or a
    # pause over HTTP) interrupts it
    "wait": (
        'turns:\n  - name: ask\n    steps:\n      - say: "Asking first."\n'
        "      - call: artifact.interact\n"
        '        args: {kind: decision_request, message: "Go on?", options: [{id: go, label: Go}, {id: stop, label: Stop}], wait_timeout_seconds: 300}\n'
    ),
}


@dataclass(frozen=True)
class Case:
    at: str  # DS_CRASH_AT: a point, or point:N for its Nth reach in its process
    host: str = "run"  # the host killed: "run" (ds run) or "serve" (ds serve)
    script: str = "work"
    first: str | None = None  # an earlier crash of the first host (the restarted one is killed at ``at``)
    max_attempts: int = 2
    stall_seconds: float = 900.0
    pause_over_http: bool = False  # ds serve: POST a pause once the turn waits for the user
    # runner.mcp_transport: "http" (the default), the host serves the namespaces, so an
    # ``mcp.*`` point kills the host; "stdio", it kills the server the agent started
    transport: str = "http"

    @property
    def point(self) -> str:
        return self.at.split(":")[0]

    @property
    def mcp(self) -> bool:
        """The point is reached in an MCP server process of the agent's, not the host."""
        return self.point.startswith("mcp.") and self.transport == "stdio"

    @property
    def id(self) -> str:
        return f"{self.host}-{self.at}" + (f"-after-{self.first}" if self.first else "") + (
            f"-{self.transport}" if self.transport != "http" else "")  # fmt: skip


@dataclass
class Outcome:
    case: Case
    reached: bool = False  # the mark file names the point, written by the process that died
    killed: str = ""  # what died: "host -9", "mcp server -9"
    running_at_crash: str | None = None  # the turn the crash left running (host points)
    interrupted: int = 0  # turns recorded interrupted by recovery (reason host_died)
    orphans: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    verify_ok: bool = False
    replay_ok: bool = False
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_case(case: Case, base: Path) -> Outcome:
    out = Outcome(case=case)
    started = time.monotonic()
    try:
        _run(case, base, out)
    except Exception as exc:  # the table shows it; the test fails on problems
        out.problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        _stop_leftovers(base)
        out.seconds = time.monotonic() - started
    return out


def table(outcomes: list[Outcome]) -> str:
    rows = ["| point | host | transport | killed | turn left running → recorded interrupted | orphans | duplicates | verify | replay | problems |",
            "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for o in outcomes:
        case = o.case
        name = case.at + (f" (after {case.first})" if case.first else "")
        turn = f"yes → {o.interrupted}x" if o.running_at_crash else f"none → {o.interrupted}x"
        rows.append(
            f"| `{name}` | {case.host} | {case.transport} | {o.killed or '-'} | {turn} | {len(o.orphans)} | {len(o.duplicates)} | "
            f"{'ok' if o.verify_ok else 'FAIL'} | {'ok' if o.replay_ok else 'FAIL'} | {'; '.join(o.problems) or '-'} |"
        )
    return "\n".join(rows)


# -- one case ---------------------------------------------------------------------------


def _run(case: Case, base: Path, out: Outcome) -> None:
    root = base / "home"
    home = Home(root)
    home.init()
    trajectory = base / "trajectory.yaml"
    trajectory.write_text(SCRIPTS[case.script])
    with open(root / "config.yaml", "a") as f:
        f.write(f"runner:\n  name: scripted\n  trajectory: {trajectory}\n  max_attempts: {case.max_attempts}\n"
                f"  backoff_seconds: 0\n  kill_grace_seconds: 1\n  stall_seconds: {case.stall_seconds}\n"
                f"  mcp_transport: {case.transport}\n")  # fmt: skip
    quest = home.create_quest("Crash matrix", quest_id="q1", brief="kill -9 at a write boundary")
    try:
        for text in ("first queued message", "second queued message"):
            quest_service.post_message(quest, quest_service.PostMessage(text=text), source="cli")
    finally:
        quest.close()
    mark = base / "crash.mark"
    env = _env(root, mark)
    running: str | None = None
    if case.first is not None:  # the first host leaves a turn running; the next dies recovering it
        _crash(Case(at=case.first, script=case.script, transport=case.transport), env, base, out, mark, log="first")
        running = _running(_events(root))
        if not out.problems:
            mark.unlink(missing_ok=True)
            out.reached = False
    if not out.problems:
        _crash(case, env, base, out, mark, log="crash", restarted=case.first is not None)
    if case.first is None:
        running = _running(_events(root))
    out.running_at_crash = running
    if case.mcp and running is not None:
        out.problems.append(f"the MCP server's death left turn {running} running")
    # A message queued while no host runs: the restarted host delivers it, once.
    _ds(env, "message", "q1", "queued while the host was down")
    clean = {k: v for k, v in env.items() if k != "DS_CRASH_AT"}
    _ds(clean, "run", "q1", log=base / "restart.log")
    if case.pause_over_http:  # the pause stands: resume, and the next host continues
        _ds(clean, "control", "q1", "resume")
        _ds(clean, "run", "q1", log=base / "resume.log")
    out.orphans = _orphans(root)
    if out.orphans:
        out.problems.append("orphans: " + ", ".join(out.orphans))
    events = _events(root)
    _check_turns(events, running, case, out)
    _check_duplicates(root, events, out)
    _check_stale_sessions(home, out)
    verified = subprocess.run([*DS, "verify", "q1"], env=clean, capture_output=True, text=True, timeout=WAIT)
    out.verify_ok = verified.returncode == 0
    if not out.verify_ok:
        out.problems.append(f"ds verify: {verified.stdout.strip()} {verified.stderr.strip()}"[:400])
    out.replay_ok = _replay_matches(root, base / "fresh", clean, out)


def _crash(case: Case, env: dict[str, str], base: Path, out: Outcome, mark: Path, *, log: str, restarted: bool = False) -> None:
    """Start the host with ``DS_CRASH_AT`` and wait for the crash (for
    ``pause_over_http``, pause the quest through the served API once its turn waits)."""
    env = dict(env, DS_CRASH_AT=case.at)
    logfile = base / f"{log}.log"
    with open(logfile, "wb") as f:
        argv = [*DS, "run", "q1"] if case.host == "run" else [*DS, "serve", "--port", "0"]
        proc = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT)
    try:
        if case.pause_over_http and not restarted:
            if _wait_for(lambda: _asked(base / "home") or proc.poll() is not None) and proc.poll() is None:
                _post_pause(logfile)
        if case.mcp and case.host == "run":
            code = proc.wait(timeout=WAIT)  # the host outlives its MCP server's death
        elif case.mcp:
            _wait_for(lambda: mark.exists() and _idle(base / "home"))
            code = None
        else:
            code = proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT)
    marks = mark.read_text().split("\n")[:-1] if mark.exists() else []
    out.reached = any(line.split()[0] == case.point for line in marks)
    if not out.reached:
        out.problems.append(f"{case.at} was not reached ({log}: exit {code}; {logfile.read_text()[-300:]!r})")
        return
    pid = int(marks[-1].split()[1])
    if case.mcp:
        out.killed = "mcp server -9" if pid != proc.pid else "host -9 (expected the server)"
        if case.host == "run" and code != 0:
            out.problems.append(f"the host exited {code} after its MCP server died (expected 0)")
    else:
        out.killed = "host -9" if code == -signal.SIGKILL and pid == proc.pid else f"host exit {code}"
        if out.killed != "host -9":
            out.problems.append(f"the host did not die of SIGKILL at {case.at} (exit {code}, mark pid {pid}, host {proc.pid})")


def _check_turns(events: list[dict[str, Any]], running: str | None, case: Case, out: Outcome) -> None:
    started = [e["run_id"] for e in events if e["type"] == "runner.turn_started"]
    finished: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["type"] == "runner.turn_finished":
            finished.setdefault(e["run_id"], []).append(e)
    for run_id in started:
        n = len(finished.get(run_id, []))
        if n != 1:
            out.problems.append(f"turn {run_id} has {n} turn_finished (expected 1)")
    interrupted = [e for f in finished.values() for e in f if e["reason"] == "host_died"]
    out.interrupted = len(interrupted)
    expected = 1 if running is not None and not case.mcp else 0
    if out.interrupted != expected:
        out.problems.append(f"{out.interrupted} turn(s) recorded interrupted by recovery (expected {expected})")
    if running is not None and not case.mcp:
        ends = finished.get(running, [])
        if [(e["outcome"], e["reason"]) for e in ends] != [("interrupted", "host_died")]:
            out.problems.append(f"the crashed turn {running} ended {[(e['outcome'], e['reason']) for e in ends]}")


def _check_duplicates(root: Path, events: list[dict[str, Any]], out: Outcome) -> None:
    inbound = [e["id"] for e in events if e["type"] == "conversation.message" and e.get("role") == "user"]
    delivered: dict[str, int] = {}
    for e in events:
        if e["type"] == "mailbox.delivered":
            for mid in e["message_ids"]:
                delivered[mid] = delivered.get(mid, 0) + 1
    for mid in inbound:
        if delivered.get(mid, 0) != 1:
            (out.duplicates if delivered.get(mid, 0) > 1 else out.problems).append(f"message {mid} delivered {delivered.get(mid, 0)} times")
    # None is lost: a message delivered to a turn the crash cut off (its agent may never
    # have read its prompt) is in the newest turn's prompt, under "Recent conversation".
    last = [e for e in events if e["type"] == "runner.turn_started"][-1:]
    prompt = (root / "quests" / "q1" / last[0]["prompt_path"]).read_text() if last else ""
    texts = [e["content"] for e in events if e["type"] == "conversation.message" and e.get("role") == "user"]
    out.problems += [f"message {t!r} is not in the newest turn's prompt" for t in texts if t not in prompt]
    numbers = _turn_numbers(events)
    presented: dict[str, set[int]] = {}
    for e in events:
        if e["type"] == "runner.turn_started":
            for mid in e["message_ids"]:
                presented.setdefault(mid, set()).add(numbers[e["run_id"]])
    out.duplicates += [f"message {m} presented to turns {sorted(n)}" for m, n in presented.items() if len(n) > 1]
    commands: dict[str, int] = {}
    for e in events:
        if e["type"] == "bash.session_started":
            commands[e["command"]] = commands.get(e["command"], 0) + 1
    out.duplicates += [f"bash session started {n} times: {c[:40]}" for c, n in commands.items() if n > 1]
    repo = pygit2.Repository(str(root / "quests" / "q1"))
    recorded = {e["sha"] for e in events if e["type"] == "git.checkpointed"}
    seen: set[str] = set()
    mine = 0
    changes: dict[frozenset[tuple[str, str]], int] = {}
    for ref in repo.references:
        if not ref.startswith("refs/heads/"):
            continue
        for commit in repo.walk(repo.references[ref].target, pygit2.GIT_SORT_TOPOLOGICAL):
            if str(commit.id) in seen:
                continue
            seen.add(str(commit.id))
            if commit.message.startswith(CHECKPOINT_MESSAGE):
                mine += 1
                change = _change(repo, commit)
                changes[change] = changes.get(change, 0) + 1
                if str(commit.id) not in recorded:
                    out.problems.append(f"commit {str(commit.id)[:10]} is not recorded in the log (orphan commit)")
    repeated = sum(n - 1 for n in changes.values() if n > 1)
    if repeated:
        out.duplicates.append(f"{repeated} checkpoint commit(s) repeating an earlier one's change ({mine} in all)")
    out.problems += [f"duplicate: {d}" for d in out.duplicates]


def _change(repo: pygit2.Repository, commit: pygit2.Commit) -> frozenset[tuple[str, str]]:
    """What ``commit`` changed against its first parent: (path, new blob id) pairs."""
    parent = commit.parents[0].tree if commit.parents else None
    diff = repo.diff(parent, commit.tree) if parent is not None else commit.tree.diff_to_tree(swap=True)
    return frozenset((d.delta.new_file.path, str(d.delta.new_file.id)) for d in diff)


def _check_stale_sessions(home: Home, out: Outcome) -> None:
    """A session the log says runs has a live monitor; every session's group is gone."""
    quest = home.open_quest("q1", actor="test")
    try:
        for s in quest.state("bash_sessions").sessions.values():
            if s.status == "running" and not procs.is_alive(s.monitor_pid, s.monitor_start_time, s.boot_id):
                out.problems.append(f"bash session {s.id} recorded running, its monitor is gone")
            if procs.group_alive(s.pgid):
                out.orphans.append(f"bash session {s.id} group {s.pgid}")
                out.problems.append(f"bash session {s.id}'s group {s.pgid} still runs")
    finally:
        quest.close()


def _replay_matches(root: Path, fresh: Path, env: dict[str, str], out: Outcome) -> bool:
    """``ds replay`` of the log alone, in a fresh home, writes the very files the live
    runtime materialised, byte for byte."""
    quest_root = fresh / "quests" / "q1"
    (quest_root / ".ds").mkdir(parents=True)
    pygit2.init_repository(str(quest_root))
    shutil.copyfile(root / "quests" / "q1" / ".ds" / "events.jsonl", quest_root / ".ds" / "events.jsonl")
    env = dict(env, DS_HOME=str(fresh))
    done = subprocess.run([*DS, "replay", "q1", "--json"], env=env, capture_output=True, text=True, timeout=WAIT)
    if done.returncode != 0:
        out.problems.append(f"ds replay: {done.stdout} {done.stderr}"[:400])
        return False
    written = json.loads(done.stdout)["files_written"]
    live = root / "quests" / "q1"
    differ = [rel for rel in written if not (live / rel).is_file() or (live / rel).read_bytes() != (quest_root / rel).read_bytes()]
    if differ or not written:
        out.problems.append(f"replay differs from the live files: {differ[:5]}")
        return False
    return True


# -- helpers ------------------------------------------------------------------------------


def _env(root: Path, mark: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DS_CRASH_AT", "DS_QUEST_ID", "DS_RUN_ID")}
    env.update(DS_HOME=str(root), DS_CRASH_MARK=str(mark), DS_TOKEN="")
    return env


def _ds(env: dict[str, str], *args: str, log: Path | None = None) -> None:
    done = subprocess.run([*DS, *args], env=env, capture_output=True, text=True, timeout=WAIT)
    if log is not None:
        log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise AssertionError(f"ds {' '.join(args)} exited {done.returncode}: {done.stdout} {done.stderr}")


def _events(root: Path) -> list[dict[str, Any]]:
    lines = (root / "quests" / "q1" / ".ds" / "events.jsonl").read_bytes().split(b"\n")
    found = []
    for line in lines:
        try:
            found.append(json.loads(line))
        except ValueError:
            continue  # a torn last line: the next opener quarantines it
    return found


def _running(events: list[dict[str, Any]]) -> str | None:
    ended = {e["run_id"] for e in events if e["type"] == "runner.turn_finished"}
    left = [e["run_id"] for e in events if e["type"] == "runner.turn_started" and e["run_id"] not in ended]
    return left[-1] if left else None


def _turn_numbers(events: list[dict[str, Any]]) -> dict[str, int]:
    numbers: dict[str, int] = {}
    first = 0
    for e in events:
        if e["type"] == "runner.turn_started":
            if e.get("retry_of") in numbers:
                numbers[e["run_id"]] = numbers[e["retry_of"]]
            else:
                first += 1
                numbers[e["run_id"]] = first
    return numbers


def _post_pause(logfile: Path) -> None:
    line = next(x for x in logfile.read_text().split("\n") if x.startswith("serving"))
    port = int(line.rsplit(":", 1)[1].split()[0])
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/quests/q1/control", data=b'{"action": "pause"}',
        headers={"Content-Type": "application/json"}, method="POST",
    )  # fmt: skip
    try:
        urllib.request.urlopen(request, timeout=WAIT).close()
    except (urllib.error.URLError, ConnectionError):
        pass  # the host died answering it: that is the crash under test


def _asked(root: Path) -> bool:
    return any(e["type"] == "interaction.sent" and e["kind"] == "decision_request" for e in _events(root))


def _idle(root: Path) -> bool:
    """The served quest is done with what it had: no turn runs, nothing is queued."""
    events = _events(root)
    delivered = {m for e in events if e["type"] == "mailbox.delivered" for m in e["message_ids"]}
    queued = [e for e in events if e["type"] == "conversation.message" and e["role"] == "user" and e["id"] not in delivered]
    return _running(events) is None and any(e["type"] == "runner.turn_finished" for e in events) and not queued


def _wait_for(predicate: Any, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _ours(root: Path) -> list[int]:
    """Live processes whose environment names this case's home (anything a host, an
    agent, an MCP server or a bash session of this case started)."""
    needle = f"DS_HOME={root}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        if procs.is_alive(int(name)):
            found.append(int(name))
    return found


def _orphans(root: Path) -> list[str]:
    """What of this case still runs once its hosts are gone: given a bounded while to end
    by itself (an agent whose host died ends at its next write), then named."""
    _wait_for(lambda: not _ours(root), timeout=30.0)
    return [f"pid {pid} ({_cmdline(pid)})" for pid in _ours(root)]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        return "?"


def _stop_leftovers(base: Path) -> None:
    """Kill whatever the case left (after the checks saw it), so no test leaks a process."""
    for pid in _ours(base / "home"):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
