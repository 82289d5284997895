"""Every validation error code of interactions and delivery: structured, and nothing written."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp
import pytest

from ds_events.cli import (
    interact as _interact_cli,  # noqa: F401 - registers ds reply/inbox/binding
    main,
)
from ds_events.errors import ServiceError
from ds_events.home import Home, Quest
from ds_events.services import interactions as service
from ds_events.services.commands import decode_command
from ds_events.services.interactions import connectors
from ds_events.services.interactions.commands import Interact, Reply
from ds_events.services.interactions.errors import CODES
from tests.helpers import domain_events, tool_error

from .clients import artifact_client

OPTIONS = [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]
# The shared vocabulary's (services/commands.py): decoding at every edge, and the kind and
# limit checks several domains make.
SHARED_CODES = {"invalid_argument", "missing_argument", "unknown_argument", "invalid_kind", "invalid_limit"}
Act = Callable[[Quest, mcp.Client, dict[str, str]], Awaitable[dict[str, Any]]]


def tool(name: str, args: dict[str, Any]) -> Act:
    async def act(quest: Quest, client: mcp.Client, ids: dict[str, str]) -> dict[str, Any]:
        return tool_error(await client.call_tool(name, {k: ids.get(v, v) if isinstance(v, str) else v for k, v in args.items()}))

    return act


def svc(fn: Callable[[Quest, dict[str, str]], Any]) -> Act:
    async def act(quest: Quest, client: mcp.Client, ids: dict[str, str]) -> dict[str, Any]:
        with pytest.raises(ServiceError) as info:
            fn(quest, ids)
        return info.value.to_dict()

    return act


def reply(key: str, text: str = "ok", **kw: Any) -> Act:
    """A reply as any edge sends it: decoded from JSON, then the service."""
    return svc(lambda q, ids: service.reply(q, decode_command(Reply, {"interaction_id": ids[key], "text": text, **kw})))


CASES: list[tuple[str, str, Act]] = [
    ("invalid_kind", "unknown kind", tool("interact", {"kind": "gossip", "message": "hi"})),
    ("empty_message", "blank message", tool("interact", {"message": "   "})),
    ("empty_message", "blank reply", reply("threaded", "  ")),
    ("message_too_long", "huge message", tool("interact", {"message": "x" * 20_001})),
    ("message_too_long", "huge reply", reply("threaded", "x" * 20_001)),
    ("invalid_reply_mode", "unknown reply mode", tool("interact", {"message": "hi", "reply_mode": "sometimes"})),
    ("invalid_reply_mode", "blocking progress", tool("interact", {"message": "hi", "reply_mode": "blocking"})),
    ("invalid_reply_mode", "unanswerable decision",
     tool("interact", {"kind": "decision_request", "message": "?", "reply_mode": "none", "options": OPTIONS})),
    ("missing_options", "decision without options", tool("interact", {"kind": "decision_request", "message": "?"})),
    ("options_not_allowed", "options on progress", tool("interact", {"message": "hi", "options": OPTIONS})),
    ("invalid_options", "one option", tool("interact", {"kind": "decision_request", "message": "?", "options": OPTIONS[:1]})),
    ("invalid_options", "duplicate option ids",
     tool("interact", {"kind": "decision_request", "message": "?", "options": [OPTIONS[0], OPTIONS[0]]})),
    ("invalid_options", "bad option id",
     tool("interact", {"kind": "decision_request", "message": "?", "options": [{"id": "a b", "label": "A"}, OPTIONS[1]]})),
    ("invalid_options", "unknown option key",
     tool("interact", {"kind": "decision_request", "message": "?", "options": [{**OPTIONS[0], "colour": "red"}, OPTIONS[1]]})),
    ("invalid_reply_schema", "schema without a type",
     tool("interact", {"kind": "decision_request", "message": "?", "options": OPTIONS, "reply_schema": {"properties": {}}})),
    ("unknown_interaction", "reply_to unknown id", tool("interact", {"message": "hi", "reply_to_interaction_id": "ia-nope"})),
    ("unknown_interaction", "get unknown interaction", tool("get_interaction", {"interaction_id": "ia-nope"})),
    ("unknown_interaction", "reply to unknown interaction",
     svc(lambda q, ids: service.reply(q, Reply(interaction_id="ia-nope", text="x")))),
    ("invalid_dedupe_key", "empty dedupe key", tool("interact", {"message": "hi", "dedupe_key": ""})),
    ("invalid_limit", "limit too large", tool("interact", {"message": "hi", "recent_message_limit": 51})),
    ("invalid_limit", "negative limit", tool("interact", {"message": "hi", "recent_message_limit": -1})),
    ("invalid_wait", "waiting on progress", tool("interact", {"message": "hi", "wait_timeout_seconds": 5})),
    ("invalid_wait", "wait too long",
     tool("interact", {"kind": "decision_request", "message": "?", "options": OPTIONS, "wait_timeout_seconds": 301})),
    ("reply_not_expected", "reply to an update sent with reply_mode none", reply("progress")),
    ("already_answered", "second reply to a blocking request", reply("answered")),
    ("unknown_option", "option not offered", reply("blocking", option_id="c")),
    ("invalid_argument", "reply data not an object", reply("blocking", data=[1, 2])),
    ("invalid_argument", "message not a string", tool("interact", {"message": 5})),
    ("missing_argument", "interact without a message", tool("interact", {"kind": "progress"})),
    ("unknown_argument", "a misspelled argument", tool("interact", {"message": "hi", "reply_mod": "none"})),
    ("reply_schema_mismatch", "data misses a required key", reply("schema", data={"lr": "high"})),
    ("interaction_exists", "interaction id taken", tool("interact", {"message": "hi", "interaction_id": "threaded"})),
    ("request_superseded", "reply to a replaced request", reply("superseded")),
    ("free_text_not_allowed", "free text where an option is required", reply("strict", "I pick a")),
    ("invalid_summary_preview", "blank preview", tool("interact", {"message": "hi", "summary_preview": " "})),
    ("invalid_summary_preview", "huge preview", tool("interact", {"message": "hi", "summary_preview": "x" * 501})),
    ("invalid_importance", "unknown importance", tool("interact", {"message": "hi", "importance": "urgent!"})),
    ("invalid_response_phase", "unknown phase", tool("interact", {"message": "hi", "response_phase": "later"})),
    ("invalid_attachments", "attachment without path or url", tool("interact", {"message": "hi", "attachments": [{"name": "x"}]})),
    ("invalid_attachments", "attachment outside the quest",
     tool("interact", {"message": "hi", "attachments": [{"path": "/etc/passwd"}]})),
    ("invalid_attachments", "attachment in the log's directory",
     tool("interact", {"message": "hi", "attachments": [{"path": ".ds/events.jsonl"}]})),
    ("invalid_attachments", "unknown attachment key",
     tool("interact", {"message": "hi", "attachments": [{"path": "brief.md", "colour": "red"}]})),
    ("invalid_attachments", "ftp url", tool("interact", {"message": "hi", "attachments": [{"url": "ftp://x.test/a.png"}]})),
    ("attachment_not_found", "missing file", tool("interact", {"message": "hi", "attachments": [{"path": "figs/none.png"}]})),
    ("invalid_surface_actions", "action without a type",
     tool("interact", {"message": "hi", "surface_actions": [{"text": "x"}]})),
    ("invalid_connector_hints", "hint not an object", tool("interact", {"message": "hi", "connector_hints": {"qq": "markdown"}})),
    ("invalid_expects_reply", "expects a reply that cannot come",
     tool("interact", {"message": "hi", "reply_mode": "none", "expects_reply": True})),
    ("invalid_expects_reply", "blocking without expecting",
     svc(lambda q, ids: service.interact(q, Interact(kind="decision_request", message="?", options=OPTIONS,
                                                     reply_mode="blocking", expects_reply=False)))),
    ("invalid_min_interval", "zero interval", tool("interact", {"message": "hi", "min_interval_seconds": 0})),
    ("invalid_min_interval", "interval on a milestone",
     tool("interact", {"kind": "milestone", "message": "hi", "min_interval_seconds": 60})),
    ("invalid_interaction_id", "bad interaction id", tool("interact", {"message": "hi", "interaction_id": "a b"})),
    ("invalid_allow_free_text", "no options to choose from",
     tool("interact", {"kind": "answer", "message": "hi", "allow_free_text": False})),
    ("unknown_connector", "unknown connector", svc(lambda q, ids: connectors.bind(q, "carrier-pigeon", "http://x.test/"))),
    ("invalid_url", "not http", svc(lambda q, ids: connectors.bind(q, "webhook", "ftp://x.test/hook"))),
    ("invalid_url", "no host", svc(lambda q, ids: connectors.bind(q, "webhook", "http:///hook"))),
    ("invalid_binding_id", "bad binding id",
     svc(lambda q, ids: connectors.bind(q, "webhook", "http://x.test/", binding_id="Bad Id"))),
    ("invalid_binding_settings", "zero attempts",
     svc(lambda q, ids: connectors.bind(q, "webhook", "http://x.test/", settings={"max_attempts": 0}))),
    ("invalid_binding_settings", "unknown setting",
     svc(lambda q, ids: connectors.bind(q, "webhook", "http://x.test/", settings={"colour": "red"}))),
    ("invalid_binding_settings", "bad token env",
     svc(lambda q, ids: connectors.bind(q, "webhook", "http://x.test/", settings={"token_env": "1 bad"}))),
    ("binding_exists", "same URL twice", svc(lambda q, ids: connectors.bind(q, "webhook", "http://hook.test/bound"))),
    ("binding_exists", "binding local", svc(lambda q, ids: connectors.bind(q, "local", "quest"))),
    ("unknown_binding", "unbind unknown", svc(lambda q, ids: connectors.unbind(q, "hook-nope"))),
    ("cannot_unbind_local", "unbind local", svc(lambda q, ids: connectors.unbind(q, "local"))),
    ("invalid_policy", "unknown policy", svc(lambda q, ids: connectors.set_routing_policy(q, "broadcast"))),
]


def _setup(quest: Quest) -> dict[str, str]:
    """Interactions the cases refer to (made before the 'nothing written' snapshot)."""
    schema = {"type": "object", "properties": {"lr": {"type": "number"}}, "required": ["lr", "epochs"]}
    ids = {
        "progress": service.interact(quest, Interact(message="progress", reply_mode="none")).interaction_id,
        "threaded": service.interact(quest, Interact(kind="answer", message="answer", reply_mode="threaded")).interaction_id,
        "superseded": service.interact(quest, Interact(kind="decision_request", message="old?", options=OPTIONS)).interaction_id,
        # Several requests stay open together (a new blocking request closes the open ones
        # unless told otherwise); the first was closed by the next.
        "blocking": service.interact(quest, Interact(kind="decision_request", message="?", options=OPTIONS)).interaction_id,
        "answered": service.interact(quest, Interact(kind="decision_request", message="??", options=OPTIONS,
                                                     supersede_open_requests=False)).interaction_id,
        "schema": service.interact(quest, Interact(kind="decision_request", message="lr?", options=OPTIONS,
                                                   reply_schema=schema, supersede_open_requests=False)).interaction_id,
        "strict": service.interact(quest, Interact(kind="decision_request", message="a or b?", options=OPTIONS,
                                                   allow_free_text=False, supersede_open_requests=False)).interaction_id,
    }
    service.reply(quest, Reply(interaction_id=ids["answered"], text="a", option_id="a"))
    connectors.bind(quest, "webhook", "http://hook.test/bound", settings={"max_attempts": 1})
    return ids


def _files(root: Path) -> dict[str, bytes]:
    # The record a refused call leaves (tool.call_finished) is in the log only: every
    # materialised file stays as it was.
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.parts and ".ds" not in p.parts}


@pytest.mark.parametrize(("code", "case", "act"), CASES, ids=[f"{c}-{n}" for c, n, _ in CASES])
async def test_bad_input_gets_a_structured_error_with_a_stable_code_and_writes_nothing(
    home: Home, quest: Quest, code: str, case: str, act: Act
) -> None:
    ids = _setup(quest)
    async with artifact_client(home) as client:
        seq, files = domain_events(quest), _files(quest.root)
        error = await act(quest, client, ids)
    assert error["error"] == code, error
    assert error["message"]
    assert domain_events(quest) == seq and _files(quest.root) == files


def test_every_error_code_of_interactions_and_delivery_has_a_case() -> None:
    assert {code for code, _, _ in CASES} == set(CODES) | SHARED_CODES


def test_the_cli_reports_a_bad_reply_or_binding_as_one_line_and_exits_non_zero(
    quest: Quest, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, expected in [
        (["reply", "q1", "ia-nope", "yes"], "error: unknown_interaction: no interaction 'ia-nope' in quest q1"),
        (["binding", "add", "q1", "ftp://x.test/"], "error: invalid_url: a webhook target must be an http(s) URL"),
        (["binding", "remove", "q1", "local"], "error: cannot_unbind_local: the local binding cannot be removed"),
        (["reply", "q1", "ia-nope", "yes", "--data", "{bad"], "error: --data is not valid JSON"),
        (["reply", "q1", "ia-nope", "yes", "--data", "[1]"], "error: invalid_argument: argument 'data' must be an object or null, got an array"),
    ]:
        seq = domain_events(quest)
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith(expected) and err.count("\n") == 1, err
        assert domain_events(quest) == seq


def test_the_cli_answers_a_request_and_lists_what_waits(quest: Quest, capsys: pytest.CaptureFixture[str]) -> None:
    iid = service.interact(quest, Interact(kind="decision_request", message="Which seed?", options=OPTIONS)).interaction_id
    with pytest.raises(SystemExit) as exit_info:
        main(["inbox", "q1"])
    assert exit_info.value.code == 0 and iid in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["reply", "q1", iid, "Seed 0", "--option", "a", "--data", '{"seed": 0}'])
    assert f"replied to {iid}" in capsys.readouterr().out
    [pending] = service.consume_mailbox(quest)[1]
    assert (pending.interaction_id, pending.option_id, pending.data) == (iid, "a", {"seed": 0})
