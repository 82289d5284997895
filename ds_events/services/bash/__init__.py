"""The bash_exec domain: durable shell sessions (start, read, await, kill) and the DeepScientist-style `bash_exec` tool.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it
(``starting``, ``queries``, ``ending``, ``sessions`` for the record they share and what
the monitor records, ``tool`` for the one-tool form) and are re-exported here.
``errors.CODES`` catalogues every code the domain raises."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        MODES as MODES,
        ORDERS as ORDERS,
        AwaitSession as AwaitSession,
        BashExec as BashExec,
        BashExecResult as BashExecResult,
        GetSession as GetSession,
        KillSession as KillSession,
        ListSessions as ListSessions,
        LogEntry as LogEntry,
        OutputPage as OutputPage,
        ReadOutput as ReadOutput,
        Session as Session,
        SessionItem as SessionItem,
        SessionList as SessionList,
        StartSession as StartSession,
        StartSpec as StartSpec,
    )
    from .ending import (
        await_session as await_session,
        check_wait_timeout as check_wait_timeout,
        kill as kill,
        kill_async as kill_async,
        kill_quest_sessions as kill_quest_sessions,
    )
    from .queries import (
        check_window as check_window,
        get_session as get_session,
        list_sessions as list_sessions,
        read_output as read_output,
    )
    from .sessions import (
        ExitFacts as ExitFacts,
        kill_grace_seconds as kill_grace_seconds,
        progress_interval_seconds as progress_interval_seconds,
        reconcile as reconcile,
        record_exit as record_exit,
        record_progress as record_progress,
        session_dir as session_dir,
    )
    from .starting import (
        prepare_start as prepare_start,
        reusable_session as reusable_session,
        start as start,
        start_async as start_async,
        start_or_reuse_async as start_or_reuse_async,
    )
    from .tool import AWAIT_TAIL_LINES as AWAIT_TAIL_LINES, bash_exec as bash_exec, command_text as command_text

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "MODES", "BashExec", "StartSession", "GetSession", "AwaitSession", "ReadOutput", "KillSession", "ListSessions",
        "OutputPage", "SessionList", "BashExecResult", "LogEntry", "SessionItem", "Session", "StartSpec", "ORDERS",
    ),
    "sessions": (
        "ExitFacts", "reconcile", "record_progress", "record_exit", "session_dir", "kill_grace_seconds",
        "progress_interval_seconds",
    ),
    "starting": ("prepare_start", "start", "start_async", "start_or_reuse_async", "reusable_session"),
    "queries": ("get_session", "read_output", "check_window", "list_sessions"),
    "ending": ("await_session", "check_wait_timeout", "kill", "kill_async", "kill_quest_sessions"),
    "tool": ("bash_exec", "command_text", "AWAIT_TAIL_LINES"),
})  # fmt: skip
