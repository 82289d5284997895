"""Process identity and process-group signalling on Linux (``/proc``), with fallbacks.

A pid alone does not name a process for long: it is reused once the process is gone.
A process is "the same" when its pid exists, is not a zombie, and its start time (clock
ticks since boot, field 22 of ``/proc/<pid>/stat``) and the boot id match what we recorded.

"Alive" and "exists" differ: a zombie has finished but still holds its pid and its
place in its process group until its parent reaps it. :func:`group_alive` asks whether
anything in a group still runs; :func:`group_exists` whether anything, zombies included,
is left in it at all.
"""

from __future__ import annotations

import os
import signal

__all__ = [
    "boot_id",
    "start_time",
    "is_alive",
    "group_alive",
    "group_exists",
    "group_members",
    "signal_group",
    "signal_name",
]


def boot_id() -> str:
    """This boot's id (empty where ``/proc`` has none): start times are per boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def start_time(pid: int) -> int | None:
    """The kernel start time of ``pid`` in clock ticks since boot, or None if unknown."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def is_alive(pid: int, recorded_start: int | None = None, recorded_boot: str = "") -> bool:
    """Whether ``pid`` is a running (non-zombie) process that is the one we recorded."""
    if pid <= 0:
        return False
    if recorded_boot and boot_id() and recorded_boot != boot_id():
        return False  # the machine rebooted since: nothing from then is running
    fields = _stat_fields(pid)
    if fields is None:
        if os.path.isdir("/proc/self"):
            return False  # /proc works and has no such pid
        try:  # no /proc (not Linux): fall back to a signal-0 probe
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    if not _runs(pid, fields):
        return False
    return recorded_start is None or int(fields[19]) == recorded_start


def group_alive(pgid: int) -> bool:
    """Whether any process that still runs (zombies aside, where ``/proc`` tells) is in
    group ``pgid``."""
    if not group_exists(pgid):
        return False
    if not os.path.isdir("/proc/self"):
        return True
    # killpg(0) also succeeds for a group of zombies; look for a live member.
    return any(_runs(pid, fields) for pid, fields in _members(pgid))


def group_exists(pgid: int) -> bool:
    """Whether any process at all, zombies included, is left in group ``pgid``.

    The kernel keeps a zombie in its group until it is reaped, and ``killpg(pgid, 0)``
    fails with ESRCH only once the last member is gone: the one test that cannot miss a
    zombie, and a single system call.
    """
    if pgid <= 1:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_members(pgid: int) -> list[int]:
    """Pids in group ``pgid``, zombies included (empty where ``/proc`` is missing)."""
    if pgid <= 1 or not os.path.isdir("/proc/self"):
        return []
    return [pid for pid, _fields in _members(pgid)]


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to group ``pgid``; False when the group no longer exists."""
    if pgid <= 1:
        return False
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"SIG{sig}"


def _members(pgid: int) -> list[tuple[int, list[str]]]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields is not None and len(fields) > 2 and int(fields[2]) == pgid:
                found.append((int(name), fields))
    return found


def _runs(pid: int, fields: list[str]) -> bool:
    """Whether the process behind ``/proc/<pid>/stat`` still runs.

    The state there is its main thread's: a process whose main thread has exited shows
    "Z" while its other threads run on (and cannot be reaped until they end). Such a
    process lists more than one task; a real zombie lists only itself.
    """
    if fields[0] == "X":
        return False
    if fields[0] != "Z":
        return True
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name: [state, ppid, pgrp, ...]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    return raw[raw.rfind(b")") + 2 :].decode().split()
