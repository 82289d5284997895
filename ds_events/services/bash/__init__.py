"""The bash_exec domain: durable shell sessions (start, read, await, kill) and the DeepScientist-style `bash_exec` tool.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        MODES as MODES,
        BashExec as BashExec,
        StartSession as StartSession,
        GetSession as GetSession,
        AwaitSession as AwaitSession,
        ReadOutput as ReadOutput,
        KillSession as KillSession,
        ListSessions as ListSessions,
        OutputPage as OutputPage,
        SessionList as SessionList,
        BashExecResult as BashExecResult,
        LogEntry as LogEntry,
        SessionItem as SessionItem,
        ORDERS as ORDERS,
    )
    from .sessions import (
        Session as Session,
        StartSpec as StartSpec,
        prepare_start as prepare_start,
        start as start,
        start_async as start_async,
        get_session as get_session,
        await_session as await_session,
        check_wait_timeout as check_wait_timeout,
        check_window as check_window,
        read_output as read_output,
        kill as kill,
        kill_async as kill_async,
        kill_quest_sessions as kill_quest_sessions,
        list_sessions as list_sessions,
        reconcile as reconcile,
        record_progress as record_progress,
        record_exit as record_exit,
        session_dir as session_dir,
        kill_grace_seconds as kill_grace_seconds,
        progress_interval_seconds as progress_interval_seconds,
    )
    from .tool import (
        bash_exec as bash_exec,
        command_text as command_text,
        AWAIT_TAIL_LINES as AWAIT_TAIL_LINES,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": ("MODES", "BashExec", "StartSession", "GetSession", "AwaitSession", "ReadOutput", "KillSession", "ListSessions", "OutputPage", "SessionList", "BashExecResult", "LogEntry", "SessionItem", "ORDERS"),
    "sessions": ("Session", "StartSpec", "prepare_start", "start", "start_async", "get_session", "await_session", "check_wait_timeout", "check_window", "read_output", "kill", "kill_async", "kill_quest_sessions", "list_sessions", "reconcile", "record_progress", "record_exit", "session_dir", "kill_grace_seconds", "progress_interval_seconds"),
    "tool": ("bash_exec", "command_text", "AWAIT_TAIL_LINES"),
})
