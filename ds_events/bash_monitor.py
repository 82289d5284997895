"""The monitor of one bash session: ``python -m ds_events.bash_monitor``.

Started by :mod:`ds_events.services.bash.starting` in its own OS session. It reads the spec
(one JSON line) on stdin, starts the command under a PTY (pipes where no PTY is
available) as leader of a new session and process group, answers with the pids on
stdout, and waits for "go" — sent once ``bash.session_started`` is in the log. Then it:

- writes the output to the numbered line log (``.ds/bash_exec/<id>/output.log``),
- turns ``__DS_PROGRESS__ {json}`` lines into ``bash.progress`` events (the first at
  once, then latest wins, at most one per ``progress_interval`` seconds, from config),
- enforces ``timeout_seconds``: TERM to the group, KILL after the grace period,
- on SIGUSR1 (sent by a kill) reads the kill request from the log and escalates to
  KILL after its grace period,
- once the command exits, stops whatever it left in its group, reaps it, and records
  the exit.

Recording in the log may fail (a full disk: ``DiskFull``/``LogError``; the views' files:
``OSError``). The monitor never dies of it: progress is best effort (the latest report
is retried after the interval, or dropped at the end); the exit is retried with a
doubling backoff for ``exit_retry_seconds`` (config ``bash_exec.exit_retry_seconds``),
then given up, and the session is marked lost by the next reconciliation once the
monitor is gone. Each of these is said in ``monitor.log`` (its stderr).

It is a child subreaper, so the command's orphaned descendants are reparented to it:
every zombie of the group is its child. It records the end only once the kernel says
the group is empty (``killpg(pgid, 0)`` fails with ESRCH) right after a reap, so a
session recorded as ended has no process left in its group, zombie or not. The one
exception it cannot fix is a zombie whose parent left the group and still runs (only
that parent may reap it): after :data:`_FOREIGN_ZOMBIE_WAIT` it records the end anyway
and names them in ``monitor.log``.

Start-up cost matters here (every session pays it before its command runs), so until
"go" this module imports only what starting the command needs: ``os``, ``signal``,
``sys``, ``time``, ``json``, :mod:`ds_events.bash.procs` and :mod:`ds_events.bash.child`
(which starts the command; ``pty`` and ``ctypes`` when used); the quest, the log and the
line log come after. Check with
``python3 -X importtime -m ds_events.bash_monitor < /dev/null``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from ds_events.bash import procs
from ds_events.bash.child import Child, reap_group

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing before "go"
if TYPE_CHECKING:
    import selectors
    from typing import Any

    from ds_events.bash.spawn import Handshake, MonitorSpec
    from ds_events.services.bash.sessions import ExitFacts

__all__ = ["main", "PROGRESS_MARK"]

PROGRESS_MARK = "__DS_PROGRESS__"
MAX_PROGRESS_BYTES = 4096
_IDLE_FLUSH = 2.0  # a line without newline is written after this long without output
_GO_TIMEOUT = 120.0
_FOREIGN_ZOMBIE_WAIT = 5.0  # how long zombies we cannot reap may hold up the end
_PROGRESS_RETRY = 1.0  # least seconds before a failed progress report is tried again
_EXIT_RETRY_FIRST, _EXIT_RETRY_MAX = 0.1, 5.0  # backoff between tries to record the exit


_FLAGS: set[str] = set()  # signals seen, set by handlers installed before anything else


def main() -> int:
    # A kill may arrive while the monitor is still starting: SIGUSR1's default action
    # would end the monitor, so catch it (and TERM) from the first instant.
    for sig, flag in ((signal.SIGCHLD, "chld"), (signal.SIGUSR1, "kill"), (signal.SIGTERM, "term")):
        signal.signal(sig, lambda *_a, f=flag: _FLAGS.add(f))
    spec: MonitorSpec | None = json.loads(sys.stdin.buffer.readline() or b"null")
    if not isinstance(spec, dict):
        return 2
    try:
        child = Child.start(spec)
    except Exception as exc:  # any failure: the service reports it
        _answer({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    me = os.getpid()
    _answer({"ok": True, "pid": child.pid, "pgid": child.pid, "monitor_pid": me, "start_time": procs.start_time(child.pid),
             "monitor_start_time": procs.start_time(me), "boot_id": procs.boot_id(), "pty": child.pty})  # fmt: skip
    if not _wait_for_go():
        # The service did not record the start (it failed or died): undo it.
        procs.signal_group(child.pid, signal.SIGKILL)
        reap_group(child.pid)
        return 1
    _detach_stdio()
    return _Monitor(spec, child).run()


class _Monitor:
    def __init__(self, spec: MonitorSpec, child: Child) -> None:
        # Imported only now, after "go": the quest, the log and the line log are not
        # needed to start the command, and importing them costs more than the start.
        from ds_events.bash import linelog
        from ds_events.errors import LogError
        from ds_events.home import Quest

        # What a failed append raises (DiskFull is a LogError) or writing the views' files.
        self.record_errors: tuple[type[BaseException], ...] = (LogError, OSError)
        self.progress_failing = False
        self.exit_retry = float(spec.get("exit_retry_seconds", 60.0))
        self.sid: str = spec["session_id"]
        self.child = child
        self.quest = Quest.at(spec["quest_root"], actor="bash_monitor")
        self.writer = linelog.LineLogWriter(spec["log_path"])
        self.started = child.started
        timeout = spec.get("timeout_seconds")
        self.deadline = self.started + timeout if timeout else None
        self.grace = float(spec.get("grace_seconds") or 0.0)
        self.progress_interval = float(spec.get("progress_interval") or 0.0)
        self.kill_at: float | None = None  # when TERM becomes KILL
        self.timed_out = False
        self.stop_reason: str | None = None
        self.kill_seen = False
        self.status: int | None = None  # the command's wait status once reaped
        self.eof = False
        self.last_output = self.started
        self.progress: tuple[int, dict[str, Any]] | None = None
        self.progress_sent_at = float("-inf")  # the first report goes out at once
        self.foreign_since: float | None = None  # since when only others' zombies are left
        self.flags = _FLAGS

    def run(self) -> int:
        import selectors

        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        # Ignored only now: an ignored signal would stay ignored in the command after exec.
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sel = selectors.DefaultSelector()
        sel.register(self.child.fd, selectors.EVENT_READ, "out")
        sel.register(wake_r, selectors.EVENT_READ, "wake")
        next_check = self.started + 1.0
        ended_at: float | None = None
        try:
            while True:
                for key, _ in sel.select(self._timeout(next_check)):
                    if key.data == "out":
                        self._read_output(sel)
                    else:
                        os.read(wake_r, 512)
                now = time.monotonic()
                self._reap()
                if "kill" in self.flags or now >= next_check:
                    self.flags.discard("kill")
                    self._check_kill_request(now)
                    next_check = now + 1.0
                if "term" in self.flags and self.stop_reason is None:
                    self.stop_reason = "monitor_signal"
                    self._terminate(now, self.grace)
                if self.deadline is not None and now >= self.deadline and not self.timed_out:
                    self.timed_out = True
                    self._terminate(now, self.grace)
                if self.kill_at is not None and now >= self.kill_at:
                    procs.signal_group(self.child.pid, signal.SIGKILL)
                    self.kill_at = None
                self._flush_idle(now)
                self._send_progress(now, final=False)
                if self.status is not None:
                    if ended_at is None:
                        ended_at = now
                        # The command is done; what it left in its group goes too.
                        if procs.group_alive(self.child.pid):
                            self._terminate(now, min(self.grace, 2.0))
                    if (self.eof or now - ended_at > 0.5) and self._group_gone(now):
                        break
        finally:
            signal.set_wakeup_fd(-1)
        return self._finish()

    # -- loop steps ---------------------------------------------------------------------

    def _timeout(self, next_check: float) -> float:
        now = time.monotonic()
        due = [next_check, now + 0.05 if self.status is not None else now + 1.0]
        for t in (self.deadline if not self.timed_out else None, self.kill_at):
            if t is not None:
                due.append(t)
        if self.progress is not None:
            due.append(self.progress_sent_at + self.progress_interval)
        if self.writer.has_partial:
            due.append(self.last_output + _IDLE_FLUSH)
        return max(0.0, min(due) - now)

    def _read_output(self, sel: selectors.BaseSelector) -> None:
        try:
            data = os.read(self.child.fd, 65536)
        except OSError:  # EIO: every holder of the terminal's other end is gone
            data = b""
        if not data:
            self.eof = True
            sel.unregister(self.child.fd)
            return
        self.last_output = time.monotonic()
        self._scan_progress(self.writer.feed(data))

    def _scan_progress(self, lines: list[tuple[int, str]]) -> None:
        for seq, text in lines:
            body = text.lstrip()
            if not body.startswith(PROGRESS_MARK) or len(body) > MAX_PROGRESS_BYTES:
                continue
            try:
                data = json.loads(body[len(PROGRESS_MARK):])
            except ValueError:
                continue
            if isinstance(data, dict):
                self.progress = (seq, data)
                if self.progress_sent_at == float("-inf"):
                    # The session's first report goes out now, before the next line of
                    # this read is scanned. Output written while the monitor was still
                    # starting (its imports after "go") arrives in one read, and "latest
                    # wins" folded the first report into a later one: it was never recorded.
                    self._send_progress(time.monotonic(), final=False)

    def _send_progress(self, now: float, *, final: bool) -> None:
        if self.progress is None or (not final and now - self.progress_sent_at < self.progress_interval):
            return
        seq, data = self.progress
        self.progress, self.progress_sent_at = None, now
        from ds_events.services.bash.sessions import record_progress  # loaded by then: a lookup

        try:
            record_progress(self.quest, self.sid, seq, data)
        except self.record_errors as exc:
            # Best effort: the command runs on. Keep the report (unless a newer one
            # comes) and try again after the interval, at least a second from now.
            if self.progress is None and not final:
                self.progress = (seq, data)
            self.progress_sent_at = now + max(0.0, _PROGRESS_RETRY - self.progress_interval)
            if not self.progress_failing or final:
                _note(f"progress of line {seq} not recorded ({_describe(exc)})"
                      + ("; dropped at the end" if final else "; the command runs on, retrying"))
            self.progress_failing = True
            return
        if self.progress_failing:
            _note(f"progress recorded again (line {seq})")
            self.progress_failing = False

    def _flush_idle(self, now: float) -> None:
        if self.writer.has_partial and now - self.last_output >= _IDLE_FLUSH:
            self._scan_progress(self.writer.flush_partial())

    def _reap(self) -> None:
        # As a subreaper we also collect the command's orphaned descendants.
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child.pid:
                self.status = status

    def _group_gone(self, now: float) -> bool:
        """Reap, then whether nothing at all, zombies included, is left of the group.

        The reap comes right before the kernel's answer so that no member can die
        unseen in between (the loop used to stop at "no live member" and left the
        zombies of members that died since its last reap). Anything still there after
        it either runs (the loop goes on stopping it) or is a zombie whose parent is
        not this monitor.
        """
        self._reap()
        pgid = self.child.pid
        if not procs.group_exists(pgid):
            return True
        if procs.group_alive(pgid):
            self.foreign_since = None
            return False
        # Only zombies are left. Ours are reaped on the next wake-up; others' only by
        # their parent, which left the group and still runs: do not wait for ever.
        if self.foreign_since is None:
            self.foreign_since = now
        if now - self.foreign_since < _FOREIGN_ZOMBIE_WAIT:
            return False
        left = procs.group_members(pgid)
        sys.stderr.write(f"bash_monitor: recording the end with zombies of other parents in the group: {left}\n")
        return True

    def _check_kill_request(self, now: float) -> None:
        if self.kill_seen:
            return
        session = self.quest.state("bash_sessions").sessions.get(self.sid)
        if session is not None and session.kill_requested:
            self.kill_seen = True
            self._terminate(now, 0.0 if session.kill_force else session.kill_grace_seconds)

    def _terminate(self, now: float, grace: float) -> None:
        if grace <= 0:
            procs.signal_group(self.child.pid, signal.SIGKILL)
            return
        procs.signal_group(self.child.pid, signal.SIGTERM)
        at = now + grace
        self.kill_at = at if self.kill_at is None else min(self.kill_at, at)

    def _finish(self) -> int:
        from ds_events.services.bash.sessions import ExitFacts

        self._scan_progress(self.writer.flush_partial())
        self._send_progress(time.monotonic(), final=True)
        self.writer.close()
        status = self.status if self.status is not None else 0
        exit_code = os.waitstatus_to_exitcode(status)
        signal_name = procs.signal_name(-exit_code) if exit_code < 0 else None
        self._record_exit(
            ExitFacts(
                exit_code=None if signal_name else exit_code,
                signal_name=signal_name,
                timed_out=self.timed_out,
                stop_reason=self.stop_reason,
                lines=self.writer.seq,
                nbytes=self.writer.bytes,
                duration_seconds=time.monotonic() - self.started,
            )
        )
        self.quest.close()
        return 0

    def _record_exit(self, facts: ExitFacts) -> bool:
        """Record the exit, retrying with a doubling backoff for ``exit_retry`` seconds.

        Retrying is safe: :func:`record_exit` decides under the log's lock and does
        nothing once the session has ended in the log. Giving up leaves the session
        "running" in the log only until this monitor is gone; then any reconciliation
        (a list, a read, a server's start) marks it lost.
        """
        from ds_events.services.bash.sessions import record_exit

        give_up_at = time.monotonic() + self.exit_retry
        delay, attempts = _EXIT_RETRY_FIRST, 0
        while True:
            attempts += 1
            try:
                record_exit(self.quest, self.sid, facts)
            except self.record_errors as exc:
                if time.monotonic() + delay > give_up_at:
                    _note(f"exit not recorded after {attempts} tries over {self.exit_retry:g} s ({_describe(exc)}): "
                          f"{json.dumps(facts._asdict())}; giving up, the session will be marked lost")
                    return False
                if attempts == 1:
                    _note(f"exit not recorded ({_describe(exc)}); retrying for up to {self.exit_retry:g} s")
                time.sleep(delay)  # nothing else to do: the command and its group are gone
                delay = min(delay * 2, _EXIT_RETRY_MAX)
                continue
            if attempts > 1:
                _note(f"exit recorded after {attempts} tries")
            return True


# -- private helpers -------------------------------------------------------------------


def _note(text: str) -> None:
    """A line in monitor.log (our stderr); on a full disk even that may fail."""
    try:
        sys.stderr.write(f"bash_monitor: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _answer(payload: Handshake) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def _wait_for_go() -> bool:
    import select

    ready, _, _ = select.select([sys.stdin.buffer], [], [], _GO_TIMEOUT)
    return bool(ready) and sys.stdin.buffer.readline().strip() == b"go"


def _detach_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


if __name__ == "__main__":
    sys.exit(main())
