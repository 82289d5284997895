"""The call log: every tool call, refused ones included, leaves its record in the
quest's log through :mod:`ds_events.services.tool_calls`, with its arguments and its
outcome: a ``tool.call_finished`` after a quick call; a ``tool.call_started`` first for
a call that may run long (see :data:`LONG_RUNNING`), so a follower sees it in progress.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from ds_events.home import Quest
from ds_events.services import tool_calls
from ds_events.services.commands import printable

from .context import NamespaceState, ToolContext

__all__ = ["CallRecord", "LONG_RUNNING"]

# Calls that may take long enough for a follower to want to see them in progress:
# (namespace, tool) -> does this call (by its raw arguments) wait on something?
LONG_RUNNING: dict[tuple[str, str], Callable[[dict[str, Any]], bool]] = {
    ("bash_exec", "bash_exec"): lambda args: args.get("mode") == "await" or (args.get("mode") == "kill" and bool(args.get("wait"))),
}


class CallRecord:
    """One tool call's record in the quest's log.

    Logging never changes the call's answer: when it cannot be written (the quest did not
    open, the disk is full) the call's own result or error still reaches the caller and
    the reason goes to stderr.
    """

    def __init__(self, tc: ToolContext[NamespaceState], namespace: str, tool: str, arguments: dict[str, Any]) -> None:
        self.tc, self.namespace, self.tool = tc, namespace, tool
        # A refused call's record keeps what was asked, lone surrogates escaped (the log
        # is UTF-8: as sent, the record could not be written).
        self.arguments = _storable(arguments)
        self.call_id = tool_calls.new_call_id()
        self.started = False
        self.t0 = time.monotonic()

    @property
    def long_running(self) -> bool:
        """Does this call get a start record before it runs?"""
        long = LONG_RUNNING.get((self.namespace, self.tool))
        return long is not None and long(self.arguments)

    async def start(self) -> None:
        def write(quest: Quest) -> None:
            tool_calls.start_call(quest, call_id=self.call_id, namespace=self.namespace, tool=self.tool, arguments=self.arguments)
            self.started = True

        await self._write(write)

    async def finish(self, *, result: Any = None, error: dict[str, Any] | None = None) -> None:
        duration_ms = (time.monotonic() - self.t0) * 1000

        def write(quest: Quest) -> None:
            tool_calls.finish_call(
                quest, call_id=self.call_id, namespace=self.namespace, tool=self.tool, arguments=self.arguments,
                started=self.started, result=result, error=error, duration_ms=duration_ms,
            )  # fmt: skip

        await self._write(write)

    async def _write(self, write: Callable[[Quest], None]) -> None:
        def run() -> None:
            try:
                quest = self.tc.quest
            except BaseException:  # the call itself reports why the quest is missing
                return
            try:
                write(quest)
            except Exception as exc:  # see the class docstring
                print(f"ds-events: could not log the {self.namespace}.{self.tool} call: {exc}", file=sys.stderr)

        await anyio.to_thread.run_sync(run)


def _storable(value: Any) -> Any:
    """``value`` with every string (names too) made encodable by :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(k) if isinstance(k, str) else k: _storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_storable(v) for v in value]
    return value
