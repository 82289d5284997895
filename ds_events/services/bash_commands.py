"""The command of the `bash_exec` namespace: one tool, several modes."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from .commands import Command

__all__ = ["BashExec"]


class BashExec(Command):
    command: Annotated[str, Meta(description="The shell command (bash -c) to start; only for detach, and for await without id.")] = ""
    mode: Annotated[str, Meta(description="detach | await | read | kill | list | history.")] = "detach"
    id: Annotated[str | None, Meta(description="The session, e.g. \"bx-1a2b3c4d\": for await (of a running session), read and kill.")] = None
    workdir: Annotated[str | None, Meta(description=(
        "Where to start: a directory inside the quest (relative to its root) or inside one of its git worktrees. "
        "When null: the quest root."
    ))] = None
    env: Annotated[dict[str, str] | None, Meta(description="Extra environment variables, {\"NAME\": \"value\"}.")] = None
    timeout_seconds: Annotated[float | None, Meta(description=(
        "> 0: the session is terminated after that long (status terminated, reason timeout). When null: no limit."
    ))] = None
    wait_timeout_seconds: Annotated[float | None, Meta(description="await: seconds to wait, at most 1800. When null: 60.")] = None
    tail: Annotated[int | None, Meta(description="read: the last N lines (1-2000).")] = None
    after_seq: Annotated[int | None, Meta(description="read: lines after this line number.")] = None
    before_seq: Annotated[int | None, Meta(description="read: the `limit` lines before this line number.")] = None
    limit: Annotated[int | None, Meta(description=(
        "read: 1-2000 lines (when null: 200 with after_seq/before_seq); history: sessions (when null: 50)."
    ))] = None
    force: Annotated[bool, Meta(description="kill: send KILL at once instead of TERM then KILL after the grace period.")] = False
    wait: Annotated[bool, Meta(description="kill: wait for the session to end.")] = False
    reason: Annotated[str | None, Meta(description="kill: recorded with the kill. When null: \"user_stop\".")] = None
