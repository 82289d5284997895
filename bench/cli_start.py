"""Read-only ``ds`` commands against a bare ``python3 -c pass``, in the same run.

A person or a script running ``ds events tail`` or ``ds quest show`` pays the
interpreter's start, our imports and the command's work on a small quest. The raw
baseline is the interpreter's start alone (``python3 -c pass``, same Python), so the
ratio is what a command adds on top of Python itself; beside the wall time it prints
each process's CPU time (from ``wait4``), which a loaded machine disturbs less. Each
round runs every command once, in an order that rotates from round to round; every figure is the median of
``--rounds`` rounds (default 10) with its spread, ratios per round. Our modules load
from a bytecode cache, as an installed package's do (see ``_start_env.py``;
``--no-bytecode-cache`` compiles them at every start instead). Run from the repository
root:

    python3 bench/cli_start.py [--rounds N] [--events N] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _rounds import ratios, spread, verdict
from _start_env import child_env

TARGET = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--events", type=int, default=50, help="Messages in the small quest.")
    parser.add_argument("--no-bytecode-cache", action="store_true", help="Compile our modules at every start.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        env = child_env(Path(tmp), bytecode_cache=not args.no_bytecode_cache)
        env["DS_HOME"] = str(Path(tmp) / "home")
        after = _small_quest(env, args.events)
        ds = [sys.executable, "-m", "ds_events"]
        commands = {
            "python3 -c pass (raw baseline)": [sys.executable, "-c", "pass"],
            f"ds events tail bench --after {after}": [*ds, "events", "tail", "bench", "--after", str(after)],
            "ds quest show bench": [*ds, "quest", "show", "bench"],
        }
        for argv in commands.values():  # warm the page cache and check each one works
            _run(argv, env)
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                wall, used = _run(commands[name], env)
                seconds[name].append(wall)
                cpu[name].append(used)
    cache = "compiled at every start" if args.no_bytecode_cache else "loaded from a bytecode cache"
    print(f"command run to completion, {args.rounds} rounds (median, spread min-max); our modules {cache}")
    _table(seconds, names, "wall")
    print("CPU time of each process:")
    _table(cpu, names, "CPU ")


def _table(values_by_name: dict[str, list[float]], names: list[str], what: str) -> None:
    for name in names:
        print(f"  {name:40s} {spread([v * 1e3 for v in values_by_name[name]], '{:.0f}', ' ms')}")
    for name in names[1:]:
        per_round = ratios(values_by_name[name], values_by_name[names[0]])
        print(f"  {what} ratio {name:34s} / python3 -c pass: {spread(per_round, unit='x')}"
              f"  ({verdict(per_round, TARGET, higher_is_better=False)})")


def _small_quest(env: dict[str, str], messages: int) -> int:
    """Create quest ``bench`` with ``messages`` user messages; the seq to tail after
    (so the tail prints the last ten events)."""
    ds = [sys.executable, "-m", "ds_events"]
    _run([*ds, "quest", "new", "--title", "bench", "--id", "bench"], env)
    code = (
        "from ds_events.home import Home\n"
        "from ds_events.services import quests\n"
        f"with Home().open_quest('bench') as q:\n"
        f"    for i in range({messages}):\n"
        "        quests.post_message(q, quests.PostMessage(text=f'message {i}'))\n"
        "    print(q.log.last_seq)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"could not fill the bench quest: {done.stderr}")
    return max(0, int(done.stdout.strip()) - 10)


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds of running ``argv`` to completion, and its CPU seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()  # the pipe closes when it exits
    _, status, usage = os.wait4(proc.pid, 0)  # reaps it; its CPU time comes with it
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.decode(errors='replace')}")
    return elapsed, usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
