"""The checks of an interaction and of a reply, made before anything is written.

:func:`check_interact` refuses a bad :class:`~.commands.Interact` (its kind, message,
reply mode, options, reply schema, limits) and says which reply mode it gets;
:func:`check_wait` the wait of a blocking request. :func:`check_reply_text` and
:func:`check_reply` refuse a bad :class:`~.commands.Reply`, the latter against the
request it answers (read under the transaction that records the reply). The delivery
arguments are :mod:`.forms`'. Every refusal is a :class:`~ds_events.errors.ServiceError`
with its own code (``ds_events.services.interactions.errors``).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events.interaction import InteractionKind, ReplyMode
from projections import interactions as view

from .commands import (
    DEFAULT_REPLY_MODE,
    KINDS,
    MAX_DEDUPE_KEY,
    MAX_MESSAGE_CHARS,
    MAX_OPTIONS,
    MAX_RECENT,
    MAX_WAIT_SECONDS,
    REPLY_MODES,
    SCHEMA_TYPES,
    SUPPRESSIBLE,
    Interact,
    Reply,
    one_of,
)
from .forms import check_interaction_id, reply_mode_for

__all__ = ["check_interact", "check_wait", "check_reply_text", "check_reply", "decision_type_of"]

_OPTION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_OPTION_KEYS = {"id", "label", "description", "recommended"}
_DECISION_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_MAX_SCHEMA_BYTES = 8192


def check_interact(state: view.State, cmd: Interact) -> tuple[InteractionKind, ReplyMode, bool]:
    """Check every argument before anything is written (``state``: the interactions view,
    for the request a reply answers); returns the kind and the effective reply mode (as
    the event stores them) and whether a reply is expected."""
    message, options = cmd.message, cmd.options
    reply_schema, recent_message_limit = cmd.reply_schema, cmd.recent_message_limit
    dedupe_key, reply_to_interaction_id = cmd.dedupe_key, cmd.reply_to_interaction_id
    kind = one_of(cmd.kind, KINDS)
    if kind is None:
        raise Invalid(f"unknown interaction kind {cmd.kind!r}: use one of {', '.join(KINDS)}", code="invalid_kind",
                      kinds=list(KINDS))  # fmt: skip
    if not isinstance(message, str) or not message.strip():
        raise Invalid("interact needs a non-empty message", code="empty_message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise Invalid(f"a message is at most {MAX_MESSAGE_CHARS} characters; put details in a file or artifact",
                      code="message_too_long", length=len(message))  # fmt: skip
    reply_mode = None if cmd.reply_mode is None else one_of(cmd.reply_mode, REPLY_MODES)
    if cmd.reply_mode is not None and reply_mode is None:
        raise Invalid(f"unknown reply_mode {cmd.reply_mode!r}: use none, threaded or blocking", code="invalid_reply_mode")
    mode, expects = reply_mode_for(kind, reply_mode, cmd.expects_reply, DEFAULT_REPLY_MODE[kind])
    if kind == "decision_request" and mode == "none":
        raise Invalid("a decision_request must be answerable: use reply_mode blocking or threaded", code="invalid_reply_mode")
    if kind in SUPPRESSIBLE and mode == "blocking":
        raise Invalid(f"a {kind} update cannot block; ask with kind decision_request", code="invalid_reply_mode")
    if reply_schema is not None:
        _check_schema(reply_schema)
    check_interaction_id(cmd.interaction_id)
    if not cmd.allow_free_text and (mode == "none" or not (options or (reply_schema or {}).get("properties"))):
        raise Invalid("allow_free_text=false needs something else to answer with: options, or a reply_schema with "
                      "properties, on an interaction that takes replies", code="invalid_allow_free_text")  # fmt: skip
    if kind == "decision_request":
        # A request labelled with a decision_type (DeepScientist's completion approval is
        # sent without options) may be answered in free text; any other needs options.
        if not options and decision_type_of(reply_schema) is None:
            raise Invalid("a decision_request needs options: a list of at least 2 {id, label} objects "
                          "(or a reply_schema {\"decision_type\": ...} for a free-text approval)",
                          code="missing_options")  # fmt: skip
        if options:
            _check_options(options)
    elif options:
        raise Invalid("options are only for kind decision_request", code="options_not_allowed")
    if isinstance(recent_message_limit, bool) or not isinstance(recent_message_limit, int) or not (
        0 <= recent_message_limit <= MAX_RECENT
    ):
        raise Invalid(f"recent_message_limit must be an integer from 0 to {MAX_RECENT}", code="invalid_limit")
    if dedupe_key is not None and (not isinstance(dedupe_key, str) or not dedupe_key.strip() or len(dedupe_key) > MAX_DEDUPE_KEY):
        raise Invalid(f"dedupe_key must be a non-empty string of at most {MAX_DEDUPE_KEY} characters", code="invalid_dedupe_key")
    if reply_to_interaction_id is not None:
        if reply_to_interaction_id not in state.interactions and reply_to_interaction_id not in state.inbound:
            raise NotFound(
                f"no interaction or user message {reply_to_interaction_id!r} to reply to", code="unknown_interaction"
            )
    return kind, mode, expects


def check_wait(cmd: Interact) -> None:
    """``wait_timeout_seconds``: 0 to :data:`~.commands.MAX_WAIT_SECONDS`, and only on a
    request that blocks (checked before anything is written: waiting is the async path's)."""
    wait = cmd.wait_timeout_seconds
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not (0 <= wait <= MAX_WAIT_SECONDS):
        raise Invalid(f"wait_timeout_seconds must be from 0 to {MAX_WAIT_SECONDS:g}", code="invalid_wait")
    default = DEFAULT_REPLY_MODE.get(cmd.kind, "threaded")
    mode = cmd.reply_mode
    blocking = mode == "blocking" or (mode is None and cmd.expects_reply is not False and default == "blocking")
    if wait > 0 and not blocking:
        raise Invalid("wait_timeout_seconds only applies to blocking requests", code="invalid_wait")


def check_reply_text(cmd: Reply) -> None:
    """A reply says something, in at most :data:`~.commands.MAX_MESSAGE_CHARS`."""
    if not cmd.text.strip():
        raise Invalid("a reply needs some text", code="empty_message")
    if len(cmd.text) > MAX_MESSAGE_CHARS:
        raise Invalid(f"a reply is at most {MAX_MESSAGE_CHARS} characters", code="message_too_long")


def check_reply(record: view.InteractionRecord, cmd: Reply) -> None:
    """Whether ``record`` takes this reply now: it takes replies, is still open, the
    option is one of its own, free text is allowed (or an option or data is given), and
    the data matches its reply schema."""
    interaction_id, option_id, data = cmd.interaction_id, cmd.option_id, cmd.data
    if record.reply_mode == "none":
        raise Conflict(f"interaction {interaction_id} does not take replies (reply_mode none)", code="reply_not_expected")
    if record.status == "answered":
        raise Conflict(f"interaction {interaction_id} was already answered", code="already_answered")
    if record.status == "superseded":
        raise Conflict(f"interaction {interaction_id} was replaced by {record.superseded_by}: answer that one",
                       code="request_superseded", superseded_by=record.superseded_by)  # fmt: skip
    ids = [o["id"] for o in record.options]
    if option_id is not None and option_id not in ids:
        raise Invalid(
            f"unknown option {option_id!r} for {interaction_id}: choose one of {', '.join(ids) or '(none)'}",
            code="unknown_option", options=ids,
        )
    if not record.delivery_options.allow_free_text and option_id is None and data is None:
        raise Invalid(
            f"{interaction_id} takes no free-text reply: choose an option"
            + (f" ({', '.join(ids)})" if ids else "") + (" or send data matching its reply_schema" if record.reply_schema else ""),
            code="free_text_not_allowed", options=ids,
        )  # fmt: skip
    if data is not None and record.reply_schema is not None:
        problems = _schema_problems(record.reply_schema, data)
        if problems:
            raise Invalid(f"reply data does not match the request's reply_schema: {'; '.join(problems)}",
                          code="reply_schema_mismatch", problems=problems)  # fmt: skip


def decision_type_of(reply_schema: dict[str, Any] | None) -> str | None:
    """The ``decision_type`` a request's reply schema names, if any."""
    decision = (reply_schema or {}).get("decision_type")
    return decision if isinstance(decision, str) and decision else None


# -- helpers ---------------------------------------------------------------------------


def _check_options(options: object) -> None:
    if not isinstance(options, list) or not (2 <= len(options) <= MAX_OPTIONS):
        raise Invalid(f"options must be a list of 2 to {MAX_OPTIONS} objects", code="invalid_options")
    seen: set[str] = set()
    for i, opt in enumerate(options):
        if not isinstance(opt, dict):
            raise Invalid(f"options[{i}] must be an object with id and label", code="invalid_options")
        oid, label = opt.get("id"), opt.get("label")
        if not isinstance(oid, str) or not _OPTION_ID_RE.match(oid):
            raise Invalid(f"options[{i}].id must be 1-64 letters, digits, '_', '.' or '-'", code="invalid_options")
        if oid in seen:
            raise Invalid(f"options[{i}].id {oid!r} is used twice", code="invalid_options")
        seen.add(oid)
        if not isinstance(label, str) or not label.strip():
            raise Invalid(f"options[{i}].label must be a non-empty string", code="invalid_options")
        extra = set(opt) - _OPTION_KEYS
        if extra:
            raise Invalid(f"options[{i}] has unknown keys {sorted(extra)}: use {sorted(_OPTION_KEYS)}", code="invalid_options")


def _check_schema(schema: object) -> None:
    """A reply schema is a small JSON Schema, a ``{"decision_type": ...}`` label, or both."""
    bad = Invalid(
        "reply_schema must be {\"decision_type\": \"...\"} and/or a small JSON Schema object: "
        "{\"type\": \"object\", \"properties\": {...}, \"required\": [...]}",
        code="invalid_reply_schema",
    )
    if not isinstance(schema, dict) or not schema:
        raise bad
    if "decision_type" in schema:
        decision = schema["decision_type"]
        if not isinstance(decision, str) or not _DECISION_TYPE_RE.match(decision):
            raise Invalid("reply_schema.decision_type must be 1-64 letters, digits, '_', '.' or '-', "
                          "e.g. \"quest_completion_approval\"", code="invalid_reply_schema")  # fmt: skip
        if set(schema) == {"decision_type"}:
            return
    if schema.get("type") not in SCHEMA_TYPES:
        raise bad
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, dict) or not all(isinstance(p, dict) for p in props.values()):
        raise bad
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise bad
    if len(msgspec.json.encode(schema)) > _MAX_SCHEMA_BYTES:
        raise bad


# The Python types of the JSON types a reply schema may name (a bool is no number).
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,), "array": (list,), "object": (dict,),
}  # fmt: skip


def _schema_problems(schema: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """Check the subset of JSON Schema we accept: required keys, property types, enums."""
    problems = [f"missing {key!r}" for key in schema.get("required", []) if key not in data]
    for key, prop in schema.get("properties", {}).items():
        if key not in data:
            continue
        value, want = data[key], prop.get("type")
        if want in _PY_TYPES and (not isinstance(value, _PY_TYPES[want]) or (want != "boolean" and isinstance(value, bool))):
            problems.append(f"{key!r} must be {want}")
        if "enum" in prop and value not in prop["enum"]:
            problems.append(f"{key!r} must be one of {prop['enum']}")
    return problems
