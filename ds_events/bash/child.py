"""Starting a session's command: leader of its own OS session and process group, its
output through a terminal (or pipes where no terminal is available).

Part of the monitor (:mod:`ds_events.bash_monitor`) before "go", so, like it, this
imports only ``os``, ``signal``, ``time`` (and ``pty``, ``subprocess``, ``ctypes`` and the
terminal modules when used): every session pays for these imports before its command runs.
"""

from __future__ import annotations

import os
import signal
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ds_events.bash.spawn import MonitorSpec

__all__ = ["Child", "reap_group"]


class Child:
    """The command, leader of its own session and process group, and its output fd."""

    def __init__(self, pid: int, fd: int, pty: bool) -> None:
        self.pid, self.fd, self.pty = pid, fd, pty
        self.started = time.monotonic()  # the timeout and the duration count from here

    @classmethod
    def start(cls, spec: MonitorSpec) -> Child:
        _become_subreaper()
        shell = _find_shell()
        argv = [shell, "-c", spec["command"]]
        try:
            import pty

            pid, fd = pty.fork()
        except OSError:
            return cls._start_with_pipes(argv, spec)
        if pid == 0:  # the child: exec the command, never return
            try:
                for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; a shell must not
                    signal.signal(sig, signal.SIG_DFL)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)  # nothing types into the session: reads see end of file
                os.chdir(spec["workdir"])
                os.execve(shell, argv, spec["env"])
            except BaseException as exc:  # whatever failed, say it where the output goes
                os.write(2, f"bash_exec: cannot start the command: {exc}\n".encode())
            finally:
                os._exit(127)
        _tune_terminal(fd)
        _wait_for_own_group(pid)
        return cls(pid, fd, True)

    @classmethod
    def _start_with_pipes(cls, argv: list[str], spec: MonitorSpec) -> Child:
        import subprocess

        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            cwd=spec["workdir"], env=spec["env"], start_new_session=True,
        )
        assert proc.stdout is not None
        fd = os.dup(proc.stdout.fileno())
        proc.stdout.close()
        return cls(proc.pid, fd, False)


def reap_group(pgid: int) -> None:
    """Wait for and reap every child of ours in group ``pgid`` (the group was killed).

    ``waitpid(-pgid)`` waits for children in that group only, so a descendant that left
    the group (and may run on) does not hold us up; members orphaned by the kill are
    reparented to us before their parent turns zombie, so the loop sees them too.
    """
    while True:
        try:
            os.waitpid(-pgid, 0)
        except ChildProcessError:
            return


def _find_shell() -> str:
    """bash from PATH (what ``shutil.which`` would find, without importing shutil)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", "bash")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return "/bin/sh"


def _wait_for_own_group(pid: int) -> None:
    """Return once the forked child leads its own group (it calls setsid after fork):
    before that, a kill of the group we report would find nothing to signal."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            if os.getpgid(pid) == pid:
                return
        except ProcessLookupError:
            return  # it already ended; the exit is recorded as usual
        time.sleep(0.001)


def _become_subreaper() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux: orphans go to init instead
        pass


def _tune_terminal(fd: int) -> None:
    """No echo, "\\n" kept as is, and a wide window so tools do not wrap their output."""
    try:
        import fcntl
        import struct
        import termios

        attrs = termios.tcgetattr(fd)
        attrs[1] &= ~termios.ONLCR
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    except (ImportError, OSError):
        pass
