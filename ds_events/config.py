"""``DS_HOME/config.yaml`` as one typed value, decoded once per version of the file.

:class:`Config` has a sub-struct per section, each field with its default, so a missing
file, a missing section or a missing key means the default, and ``key: null`` (a section
whose keys are all commented out) does too. Every value is checked when the file is
read: a wrong type, a number out of range, an unknown durability policy, or a key we do
not know is :class:`~ds_events.errors.Invalid` with code ``bad_config``, naming the key
and the file, before any command acts on it.

Unknown keys are refused, not ignored: a misspelled key (``git.max_file_byte``) that
was silently dropped would leave the default in force while its author believes the
setting applies, which is the failure a config file must not have (the commands refuse
unknown arguments for the same reason). A new setting is added here first.

:class:`ConfigFile` keeps the decoded value and reads the file again only when its
inode, size or modification time changed, so callers on hot paths (every memory search,
every bash start) can ask for it freely.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Annotated, Any, Literal, dataclass_transform

import msgspec
from msgspec import Meta

from .errors import Invalid
from .log.eventlog import MAX_EVENT_BYTES
from .log.postgres import CONNECTION_WAIT

__all__ = [
    "Config",
    "GitConfig",
    "LogConfig",
    "MemoryConfig",
    "BashExecConfig",
    "WebhookConfig",
    "ConnectorsConfig",
    "ArxivConfig",
    "ServeConfig",
    "RunnerConfig",
    "CodexProviderConfig",
    "RUNNER_NAMES",
    "PromptConfig",
    "PromptBudgets",
    "ConfigFile",
    "parse_config",
    "unknown_key",
    "check_store_url",
    "parse_store_setting",
    "DEFAULT_ARXIV_API_URL",
]

DEFAULT_ARXIV_API_URL = "https://export.arxiv.org/api/query"

_Seconds = Annotated[float, Meta(ge=0, le=3600)]


# Subclasses inherit these settings (say so to the type checker: see ds_events.events.base).
@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(msgspec.field,))
class _Section(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Base of every section: immutable (one decoded value is shared), unknown keys refused."""


class GitConfig(_Section):
    # Files larger than this are left out of checkpoints (listed as skipped, too_large).
    max_file_bytes: Annotated[int, Meta(ge=1)] = 50 * 1024 * 1024


class LogConfig(_Section):
    # The longest line an append accepts; a larger event is refused with event_too_large.
    max_event_bytes: Annotated[int, Meta(ge=1)] = MAX_EVENT_BYTES
    # A database store (store: postgresql://...): the most seconds an append or a read
    # waits for a connection (the server down, restarting or unreachable, every pooled
    # connection busy) before it fails with log_timeout or log_connection_lost (the
    # daemon answers 503 log_unavailable). The file store never waits for a server.
    connection_wait_seconds: Annotated[float, Meta(gt=0, le=3600)] = CONNECTION_WAIT


class MemoryConfig(_Section):
    shared_across_quests: bool = False  # search other quests' cards too (read-only)
    config_guard_keys: tuple[str, ...] = ()  # settings a memory card must not pin


class BashExecConfig(_Section):
    kill_grace_seconds: _Seconds = 5.0  # between TERM and KILL
    progress_interval_seconds: _Seconds = 5.0  # least time between two progress events
    # How long a monitor retries recording the exit when the log cannot take it (a full
    # disk); past it, it gives up and the session is reconciled as lost.
    exit_retry_seconds: _Seconds = 60.0


class WebhookConfig(_Section, omit_defaults=True):
    # The same bounds as a binding's own settings (services.connectors).
    max_attempts: Annotated[int, Meta(ge=1, le=10)] = 3
    backoff_seconds: Annotated[float, Meta(ge=0, le=60)] = 1.0
    timeout_seconds: Annotated[float, Meta(ge=0.05, le=120)] = 10.0
    token_env: Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None


class ConnectorsConfig(_Section):
    webhook: WebhookConfig = WebhookConfig()


class ArxivConfig(_Section):
    api_url: Annotated[str, Meta(min_length=1)] = DEFAULT_ARXIV_API_URL


class ServeConfig(_Section):
    """``ds serve``: where the daemon listens and the token it requires (flags win)."""

    host: Annotated[str, Meta(min_length=1)] = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535)] = 8765
    token: str | None = None


RUNNER_NAMES = ("codex", "claude", "acp", "scripted")

_ENV_NAME = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class CodexProviderConfig(_Section):
    """The codex runner's model provider when it is not Codex's own default (OpenAI,
    with the user's login): any OpenAI Responses-API endpoint (a gateway, a local model
    server, a scripted test endpoint on loopback). Codex accepts only ``wire_api =
    "responses"`` for a custom provider, so that is what the runner writes."""

    base_url: Annotated[str, Meta(pattern=r"^https?://\S+$")]  # e.g. http://127.0.0.1:8000/v1
    # The [model_providers.<name>] table; Codex's built-in ids cannot be redefined.
    name: Annotated[str, Meta(pattern=r"^(?!(openai|ollama|lmstudio|oss)$)[A-Za-z0-9_-]{1,64}$")] = "ds"
    env_key: _ENV_NAME | None = None  # the variable holding the API key (none: no Authorization header)
    request_max_retries: Annotated[int, Meta(ge=0, le=100)] = 4
    stream_max_retries: Annotated[int, Meta(ge=0, le=100)] = 5


class RunnerConfig(_Section):
    """Turns: which agent runs them (a quest's own setting and ``ds run --runner`` win)
    and how the scheduler watches it."""

    name: Literal["codex", "claude", "acp", "scripted"] = "codex"
    model: str = ""  # empty: the agent's own default
    # A runner that prints nothing for this long is ended and the turn recorded stalled.
    stall_seconds: Annotated[float, Meta(gt=0, le=86400)] = 900.0
    # Attempts per turn, the first included: a failed or stalled turn is retried after
    # backoff_seconds, doubling each time up to backoff_max_seconds.
    max_attempts: Annotated[int, Meta(ge=1, le=10)] = 3
    backoff_seconds: _Seconds = 5.0
    backoff_max_seconds: _Seconds = 120.0
    kill_grace_seconds: _Seconds = 5.0  # between asking the agent to stop (TERM) and KILL
    # The command that starts each agent (argv), when not the default on PATH, e.g.
    # ``acp: ["codex-acp"]`` or ``codex: ["/opt/node/bin/codex"]``.
    commands: dict[str, list[str]] = {}
    trajectory: str | None = None  # the scripted runner's trajectory file
    # The codex runner: its model provider (none: Codex's default) and the sandbox its
    # own shell commands run in (our MCP servers run outside it either way).
    codex_provider: CodexProviderConfig | None = None
    codex_sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    # How a turn's agent reaches the memory / artifact / bash_exec tools: ``http`` (the
    # default), served by the host process itself over MCP streamable HTTP on loopback,
    # with a bearer token per turn; ``stdio``, three ``ds mcp`` processes the agent starts
    # per turn (each opens the quest again: a slower start, no listener on loopback).
    mcp_transport: Literal["stdio", "http"] = "http"


_Budget = Annotated[int, Meta(ge=200, le=1_000_000)]


class PromptBudgets(_Section):
    """The most characters each block of a turn's prompt may take (heading included);
    a longer block is cut and says so. ``services.prompt`` documents the blocks."""

    system: _Budget = 24_000
    runtime: _Budget = 2_000
    communication: _Budget = 2_000
    skills: _Budget = 1_500
    quest_files: _Budget = 1_000
    durable_state: _Budget = 4_000
    interaction_style: _Budget = 1_500
    memory: _Budget = 6_000
    conversation: _Budget = 8_000
    message: _Budget = 16_000


class PromptConfig(_Section):
    """The turn prompt (``services.prompt``): its whole size, each block's budget, and
    how much conversation and memory it pulls."""

    # The whole prompt never exceeds this, however long the quest has run: blocks are
    # shrunk (the conversation first) until it fits.
    max_chars: Annotated[int, Meta(ge=4_000, le=2_000_000)] = 60_000
    conversation_items: Annotated[int, Meta(ge=0, le=200)] = 12  # newest messages and interactions shown
    conversation_item_chars: Annotated[int, Meta(ge=80, le=100_000)] = 1_500  # each cut to this
    memory_per_kind: Annotated[int, Meta(ge=0, le=20)] = 3  # cards per step of the stage memory plan
    memory_search_limit: Annotated[int, Meta(ge=0, le=50)] = 6  # cards matching the message's words
    budgets: PromptBudgets = PromptBudgets()


class Config(_Section):
    """The whole file; ``Config()`` is every default."""

    durability: Literal["always", "group", "never"] = "group"
    # Where this home's logs live: ``file`` (each quest's .ds/events.jsonl) or a
    # PostgreSQL URL (one database that several homes, on several machines, share).
    # ``DS_STORE`` in the environment wins (see ds_events.stores).
    store: str = "file"
    git: GitConfig = GitConfig()
    log: LogConfig = LogConfig()
    memory: MemoryConfig = MemoryConfig()
    bash_exec: BashExecConfig = BashExecConfig()
    connectors: ConnectorsConfig = ConnectorsConfig()
    arxiv: ArxivConfig = ArxivConfig()
    serve: ServeConfig = ServeConfig()
    runner: RunnerConfig = RunnerConfig()
    prompt: PromptConfig = PromptConfig()


def parse_config(text: str, path: Path) -> Config:
    """The config in ``text`` (the content of ``path``, named in errors), or ``bad_config``."""
    import yaml  # here, not at the top: most read-only commands never parse the config

    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "parse error"
        raise Invalid(f"{path} is not valid YAML{where} ({problem}): fix or delete it", code="bad_config", file=str(path)) from None
    if loaded is None:
        return Config()
    if not isinstance(loaded, dict):
        raise Invalid(f"{path} must hold a mapping of sections (durability, git, log, ...)", code="bad_config", file=str(path))
    try:
        config = msgspec.convert(_without_nulls(loaded), Config)
    except msgspec.ValidationError as exc:
        raise _bad_value(str(exc), path) from None
    check_store_url(config.store, f"{path}: store", file=str(path))
    return config


def check_store_url(value: str, where: str, **details: str) -> str:
    """``value`` if it names a store (``file`` or ``postgresql://…``), else ``bad_config``
    saying what ``where`` (the file's key, or the environment variable) takes."""
    if value == "file" or _STORE_URL.match(value):
        return value
    raise Invalid(
        f"{where} is {value!r}; use file (the default: a JSONL log per quest) or a PostgreSQL URL such as "
        "postgresql://user@host:5432/dbname",
        code="bad_config",
        key="store",
        allowed=["file", "postgresql://..."],
        **details,
    )


def parse_store_setting(path: Path) -> str:
    """Only the ``store`` key of the config at ``path`` (``file`` when absent), for
    read-only commands that must find the logs even when another key is wrong."""
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return "file"
    value = loaded.get("store") if isinstance(loaded, dict) else None
    if value is None:
        return "file"
    if not isinstance(value, str):
        raise Invalid(f"{path}: store must be a string (file or postgresql://...)", code="bad_config", key="store", file=str(path))
    return check_store_url(value, f"{path}: store", file=str(path))


class ConfigFile:
    """``path`` decoded as a :class:`Config`, cached until the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._cached: tuple[tuple[int, int, int] | None, Config] | None = None

    def load(self) -> Config:
        try:
            st = os.stat(self.path)
            key: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            key = None
        cached = self._cached
        if cached is not None and cached[0] == key:
            return cached[1]
        with self._lock:
            try:
                text = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = ""
            config = parse_config(text, self.path)  # a bad file is never cached: it raises every time
            self._cached = (key, config)
            return config


def unknown_key(key: str, where: str, known: list[str], path: Path) -> Invalid:
    """The ``bad_config`` error for a key the file may not have: ``where`` is its section
    ("" for the top), ``known`` the keys that section takes (``ds config get`` says the
    same words as the loader)."""
    return Invalid(
        f"{path}: unknown key {key!r}" + (f"; {where or 'the file'} takes {', '.join(known)}" if known else ""),
        code="bad_config",
        key=key,
        file=str(path),
        allowed=known,
    )


# -- private helpers ----------------------------------------------------------------------

_STORE_URL = re.compile(r"^postgres(?:ql)?://\S*$")
_AT = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<field>[^`]+)`")
_EXPECTED = re.compile(r"^Expected `(?P<expected>[^`]+)`(?P<rest>[^,]*)(?:, got `(?P<got>[^`]+)`)?")
_ENUM = re.compile(r"^Invalid enum value (?P<value>.+)$")
_TYPE_NAMES = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false", "object": "a mapping"}


def _bad_value(text: str, path: Path) -> Invalid:
    """msgspec's message as a ``bad_config`` error that names the key and says what it takes."""
    at = _AT.search(text)
    where = at.group("path") if at else ""
    text = text[: at.start()] if at else text
    unknown = _UNKNOWN.match(text)
    if unknown:
        key = f"{where}.{unknown.group('field')}" if where else unknown.group("field")
        return unknown_key(key, where, _known_keys(where), path)
    enum = _ENUM.match(text)
    if enum:
        allowed = list(_literal_values(where))
        return Invalid(
            f"{path}: {where} is {enum.group('value')}; use {_either(allowed)}",
            code="bad_config",
            key=where,
            file=str(path),
            allowed=allowed,
        )
    expected = _EXPECTED.match(text)
    if expected:
        wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in expected.group("expected").split(" | "))
        got = expected.group("got")
        message = f"{path}: {where} must be {wanted}{expected.group('rest')}" + (f", not {_TYPE_NAMES.get(got, got)}" if got else "")
        return Invalid(message, code="bad_config", key=where, file=str(path))
    return Invalid(f"{path}: {where or 'the file'}: {text}", code="bad_config", key=where, file=str(path))


def _either(values: list[str]) -> str:
    return " or ".join(filter(None, [", ".join(values[:-1]), values[-1]])) if values else "a known value"


def _without_nulls(value: Any) -> Any:
    """``key: null`` means the default: drop such keys at every level."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def _section_type(dotted: str) -> Any:
    cls: Any = Config
    for part in filter(None, dotted.split(".")):
        field = next((f for f in msgspec.structs.fields(cls) if f.encode_name == part), None)
        if field is None or not (isinstance(field.type, type) and issubclass(field.type, msgspec.Struct)):
            return None
        cls = field.type
    return cls


def _known_keys(dotted: str) -> list[str]:
    cls = _section_type(dotted)
    return [f.encode_name for f in msgspec.structs.fields(cls)] if cls is not None else []


def _literal_values(dotted: str) -> tuple[str, ...]:
    section, _, name = dotted.rpartition(".")
    cls = _section_type(section)
    field = next((f for f in msgspec.structs.fields(cls) if f.encode_name == name), None) if cls is not None else None
    return getattr(field.type, "__args__", ()) if field is not None else ()
