"""The quest home: ``DS_HOME`` with ``config.yaml``, global memory and ``quests/<id>/``.

A quest is a git repository (pygit2, branch ``main``) whose human-readable files are
materialised from its event log at ``.ds/events.jsonl``. :class:`Quest` is the handle a
service works through: it owns the log, the live views and the materialised files.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from projections.artifacts import State as ArtifactsState
from projections.bash_sessions import State as BashSessionsState
from projections.interactions import State as InteractionsState
from projections.manuscript import State as ManuscriptState
from projections.memory import MemoryState
from projections.node_traces import State as NodeTracesState
from projections.papers import State as PapersState
from projections.research import State as ResearchState
from projections.status import StatusState
from projections.turns import State as TurnsState
from projections.workflow import State as WorkflowState

from .config import Config, ConfigFile, LogConfig, parse_store_setting
from .errors import Conflict, Invalid, NotFound
from .events import Event, QuestCreated
from .log import MAX_EVENT_BYTES
from .log.anchor import WITNESS_DIR, load_key, read_key
from .paths import write_atomic
from .store import EventStore, StoreTransaction
from .stores import GLOBAL_LOG, REGISTRY_LOG, RESERVED_LOG_NAMES, is_file_store, log_exists, open_log, resolve_store, stored_log_names
from .views import Views

if TYPE_CHECKING:
    import pygit2

__all__ = [
    "Home",
    "Quest",
    "default_home",
    "validate_quest_id",
    "QUEST_ID_RE",
    "DEFAULT_CONFIG",
]

E = TypeVar("E", bound=Event)

QUEST_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# What `ds init` writes (the sections people change most); every default is in Config.
DEFAULT_CONFIG: dict[str, Any] = {
    "store": "file",  # file | postgresql://user@host:5432/dbname (the README's optional section)
    "durability": "group",  # always | group | never
    "memory": {"shared_across_quests": False},
    "git": {"max_file_bytes": 50 * 1024 * 1024},
    "bash_exec": {"kill_grace_seconds": 5, "progress_interval_seconds": 5},
}
_GITIGNORE = ".ds/\n__pycache__/\n.venv/\nvenv/\n*.pyc\n"


def default_home() -> Path:
    """``$DS_HOME`` if set, else ``~/.ds-events``."""
    env = os.environ.get("DS_HOME")
    return Path(env).expanduser() if env else Path.home() / ".ds-events"


def validate_quest_id(quest_id: str) -> str:
    """Return ``quest_id`` if it is safe as a directory name, else raise :class:`Invalid`."""
    if not isinstance(quest_id, str) or not QUEST_ID_RE.match(quest_id):
        raise Invalid(
            f"invalid quest id {quest_id!r}: use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit",
            code="invalid_quest_id",
        )
    return quest_id


class Home:
    """A ``DS_HOME`` directory."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_home()
        self._config = ConfigFile(self.config_path)

    @property
    def quests_dir(self) -> Path:
        return self.root / "quests"

    @property
    def config_path(self) -> Path:
        return self.root / "config.yaml"

    @property
    def global_memory_dir(self) -> Path:
        return self.root / "memory"

    def is_initialised(self) -> bool:
        return self.config_path.is_file() and self.quests_dir.is_dir()

    def init(self) -> bool:
        """Create the home layout; returns False if it already existed (nothing changed)."""
        existed = self.is_initialised()
        self.quests_dir.mkdir(parents=True, exist_ok=True)
        self.global_memory_dir.mkdir(parents=True, exist_ok=True)
        if not self.config_path.exists():
            import yaml  # loaded only where a config is written or read

            write_atomic(self.config_path, yaml.safe_dump(DEFAULT_CONFIG, sort_keys=False).encode())
        return not existed

    def config(self) -> Config:
        """``config.yaml`` as a typed value (defaults for what it leaves out), read again
        only when the file changed; a bad value is ``bad_config`` naming the key."""
        return self._config.load()

    def store_url(self, *, strict: bool = True) -> str:
        """Where this home's logs live: ``file`` or a PostgreSQL URL (``DS_STORE``, else
        ``config.yaml``'s ``store``). ``strict=False`` (read-only commands): a bad value
        elsewhere in the config does not stop anyone from finding the logs to read."""
        try:
            configured = self.config().store
        except Invalid:
            if strict:
                raise
            configured = parse_store_setting(self.config_path)
        return resolve_store(configured)

    def quest_root(self, quest_id: str) -> Path:
        return self.quests_dir / validate_quest_id(quest_id)

    def log_root(self, name: str) -> Path:
        """The directory whose files the log ``name`` materialises: a quest's repository,
        global memory's directory, or the baseline registry's."""
        if name == GLOBAL_LOG:
            return self.global_memory_dir
        if name == REGISTRY_LOG:
            return self.root / "baselines"
        return self.quest_root(name)

    def open_log(
        self, name: str, *, actor: str = "", read_only: bool = False, recover: bool = True, root: Path | None = None
    ) -> EventStore:
        """The log ``name`` (a quest id, ``global``, ``baseline-registry``) in this home's
        store, with the home's durability policy, event size limit and log key."""
        root = root if root is not None else self.log_root(name)
        # A read-only handle appends nothing, so it needs neither the durability policy
        # nor the event size limit: it does not parse config.yaml for them (a bad config
        # does not stop anyone from reading a quest).
        config = None if read_only else self.config()
        return open_log(
            self.store_url(strict=not read_only),
            path=root / ".ds" / "events.jsonl",
            name=name,
            actor=actor,
            policy="never" if config is None else config.durability,
            read_only=read_only,
            recover=recover,
            key=self.log_key(create=not read_only),
            max_event_bytes=MAX_EVENT_BYTES if config is None else config.log.max_event_bytes,
            connection_wait=self.connection_wait(),
            witness=self.log_witness(name),
        )

    def connection_wait(self) -> float:
        """``log.connection_wait_seconds``: how long an operation on a database store
        waits for a connection. A bad config.yaml gives the default here, so a reader
        is not stopped by it (a writer has been refused by its own parse already)."""
        try:
            return self.config().log.connection_wait_seconds
        except Invalid:
            return LogConfig().connection_wait_seconds

    def has_log(self, name: str, *, root: Path | None = None) -> bool:
        """Whether the log ``name`` holds any event in this home's store."""
        root = root if root is not None else self.log_root(name)
        return log_exists(
            self.store_url(strict=False), path=root / ".ds" / "events.jsonl", name=name, wait=self.connection_wait()
        )

    def quest_ids(self) -> list[str]:
        """Every quest of this home's store: the quest directories with a log file, or
        the quests the database holds (whether or not this machine has opened them)."""
        url = self.store_url(strict=False)
        if not is_file_store(url):
            return [n for n in stored_log_names(url, wait=self.connection_wait()) if n not in RESERVED_LOG_NAMES and QUEST_ID_RE.match(n)]
        if not self.quests_dir.is_dir():
            return []
        return sorted(
            p.name for p in self.quests_dir.iterdir() if QUEST_ID_RE.match(p.name) and (p / ".ds" / "events.jsonl").is_file()
        )

    def create_quest(self, title: str, *, quest_id: str | None = None, brief: str = "", actor: str = "cli") -> Quest:
        """Create ``quests/<id>/`` as a git repository whose files come from its first event."""
        title = (title or "").strip()
        if not title:
            raise Invalid("a quest needs a non-empty title: pass --title", code="missing_title")
        if "\n" in title or len(title) > 200:
            raise Invalid("a quest title is one line of at most 200 characters", code="invalid_title")
        self.init()
        if quest_id is None:
            quest_id = _fresh_id(self.quests_dir, title, taken=self.has_log)
        elif quest_id in RESERVED_LOG_NAMES:
            raise Invalid(
                f"quest id {quest_id!r} is reserved (it names the home's {quest_id} log): choose another --id",
                code="reserved_quest_id",
            )
        root = self.quest_root(quest_id)
        try:
            root.mkdir(parents=False)
        except FileExistsError:
            raise Conflict(f"quest {quest_id!r} already exists: choose another --id", code="quest_exists") from None
        import pygit2  # only creating a quest or working with git needs it

        from .artifacts.git import commit_all

        try:
            repo = pygit2.init_repository(str(root), initial_head="main")
            write_atomic(root / ".gitignore", _GITIGNORE.encode())
            quest = Quest(self, quest_id, actor=actor)
            try:
                # On a shared store another home may have created this quest: the
                # first event decides, under the log's lock.
                with quest.transaction() as txn:
                    if txn.last_seq:
                        raise Conflict(f"quest {quest_id!r} already exists: choose another --id", code="quest_exists")
                    txn.append(QuestCreated(title=title, brief=brief))
            except BaseException:
                quest.close()
                raise
            commit_all(repo, f"Create quest {quest_id}: {title}")
            return quest
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def require_quest(self, quest_id: str) -> Path:
        """The quest's root, or :class:`NotFound` (``unknown_quest``); opens nothing.
        On a shared store the root may not exist yet: opening the quest makes it."""
        root = self.quest_root(quest_id)
        if quest_id in RESERVED_LOG_NAMES or not self.has_log(quest_id, root=root):
            raise NotFound(f"no quest {quest_id!r} in {self.root}: see `ds quest list`", code="unknown_quest")
        return root

    def open_quest(self, quest_id: str, *, actor: str = "cli", read_only: bool = False, run_id: str | None = None) -> Quest:
        self.require_quest(quest_id)
        return Quest(self, quest_id, actor=actor, read_only=read_only, run_id=run_id)

    def log_key(self, *, create: bool = True) -> bytes | None:
        """The key that signs this home's log head anchors (created on first use)."""
        return load_key(self.root) if create else read_key(self.root)

    def log_witness(self, name: str) -> Path:
        """Where this home keeps the witness of the log ``name``'s head: beside the key,
        outside the quest, so a quest restored from an old copy cannot rewind it."""
        return self.root / WITNESS_DIR / f"{name}.head"


class Quest:
    """An open quest: its log, its live views and its materialised files."""

    def __init__(
        self,
        home: Home,
        quest_id: str,
        *,
        actor: str = "cli",
        root: Path | None = None,
        read_only: bool = False,
        run_id: str | None = None,
    ) -> None:
        """``read_only``: never recover, truncate, append or write a file (``ds quest
        show``); a torn tail is left in place and reported as ``self.log.torn``.
        ``run_id``: stamped on every event appended through this handle that names no
        run itself (the MCP servers a turn's agent starts: their events belong to it)."""
        self._run_id = run_id
        self.home = home
        self.id = quest_id
        self.root = root if root is not None else home.quest_root(quest_id)
        self._actor = actor
        self._read_only = read_only
        self._reopening = threading.Lock()
        self._retired: list[EventStore] = []  # replaced handles: another thread may still read one
        self.closed = False  # closed (by its owner, or by a deletion of the quest)
        # On a shared store this machine may not have the quest's repository yet: its
        # files are projections of the store's log, written here on first open.
        fresh = not read_only and not self.root.is_dir()
        if fresh:
            _init_repository(self.root)
        self.log = self._open_log()
        try:
            self.views = Views(self.log, self.root).load()
            if fresh or self.log.recovered is not None:
                self.views.materialise(full=fresh)
        except BaseException:
            self.log.close()
            raise

    @property
    def run_id(self) -> str | None:
        """The run stamped on what this handle appends (a turn's MCP server), else None."""
        return self._run_id

    def bind_run(self, run_id: str | None) -> None:
        """Stamp ``run_id`` from now on on every event appended through this handle that
        names no run itself (None: none). The host-served MCP transport lends one open
        quest to one turn after another."""
        self._run_id = run_id
        self.log.run_id = run_id

    def _open_log(self) -> EventStore:
        log = self.home.open_log(self.id, actor=self._actor, read_only=self._read_only, root=self.root)
        log.run_id = self._run_id
        return log

    def _writable_log(self) -> EventStore:
        """The log handle to append through. After a failed write (a full disk) a
        file log refuses until reopened; reopening here means a long-running server
        appends again by itself once there is room, instead of failing every call."""
        if self.log.needs_reopen:
            with self._reopening:
                if self.log.needs_reopen:
                    self._retired.append(self.log)
                    self.log = self._open_log()
                    self.views.log = self.log
        return self.log

    @classmethod
    def at(cls, root: str | os.PathLike[str], *, actor: str = "cli") -> Quest:
        """Open the quest whose repository is ``root`` (``DS_QUEST_ROOT``)."""
        root = Path(root).resolve()
        home = Home(root.parent.parent)
        if not QUEST_ID_RE.match(root.name) or not home.has_log(root.name, root=root):
            raise NotFound(f"{root} is not a quest (no log in its home's store)", code="unknown_quest")
        return cls(home, root.name, actor=actor, root=root)

    # One overload per quest projection, so a caller's state is typed by its name.
    # tests/core/test_views_state.py checks they match quest_projections().
    @overload
    def state(self, name: Literal["status"] = "status") -> StatusState: ...
    @overload
    def state(self, name: Literal["memory"]) -> MemoryState: ...
    @overload
    def state(self, name: Literal["bash_sessions"]) -> BashSessionsState: ...
    @overload
    def state(self, name: Literal["artifacts"]) -> ArtifactsState: ...
    @overload
    def state(self, name: Literal["interactions"]) -> InteractionsState: ...
    @overload
    def state(self, name: Literal["workflow"]) -> WorkflowState: ...
    @overload
    def state(self, name: Literal["node_traces"]) -> NodeTracesState: ...
    @overload
    def state(self, name: Literal["turns"]) -> TurnsState: ...
    @overload
    def state(self, name: Literal["papers"]) -> PapersState: ...
    @overload
    def state(self, name: Literal["research"]) -> ResearchState: ...
    @overload
    def state(self, name: Literal["manuscript"]) -> ManuscriptState: ...

    def state(self, name: str = "status") -> Any:
        """The projection ``name`` caught up with the log (every process's events).

        The value is the caller's to keep: it never changes afterwards, whatever this
        or another thread appends (later events go to a copy); call again for news.
        Unknown names raise :class:`NotFound` (``unknown_projection``).
        """
        self.views.catch_up()
        try:
            return self.views.state(name)
        except KeyError:
            known = ", ".join(p.name for p in self.views.projections)
            raise NotFound(f"no projection {name!r}: one of {known}", code="unknown_projection") from None

    @overload
    def emit(self, events: E) -> E: ...
    @overload
    def emit(self, events: Sequence[Event]) -> list[Event]: ...

    def emit(self, events: Event | Sequence[Event]) -> Event | list[Event]:
        """Append ``events`` atomically, update views, write the files they change.

        One event in, that event as stored (its own type, with seq and id); a batch in,
        the batch as stored."""
        batch = [events] if isinstance(events, Event) else list(events)
        stored = self._writable_log().append(batch)
        assert isinstance(stored, list)
        self.views.materialise(stored)
        return stored[0] if isinstance(events, Event) else stored

    @overload
    async def emit_async(self, events: E) -> E: ...
    @overload
    async def emit_async(self, events: Sequence[Event]) -> list[Event]: ...

    async def emit_async(self, events: Event | Sequence[Event]) -> Event | list[Event]:
        """:meth:`emit` without blocking the event loop."""
        batch = [events] if isinstance(events, Event) else list(events)
        stored = await self._writable_log().append_async(batch)
        assert isinstance(stored, list)
        self.views.materialise(stored)
        return stored[0] if isinstance(events, Event) else stored

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StoreTransaction]:
        """Read-decide-append under the log's lock (see :meth:`EventLog.transaction`).

        Views are caught up on entry, so ``self.state(...)`` inside sees every process's
        events; files are materialised after the lock is released.
        """
        with self._writable_log().transaction() as txn:
            self.views.catch_up()
            yield txn
        self.views.materialise(txn.appended)

    def repo(self) -> pygit2.Repository:
        import pygit2

        return pygit2.Repository(str(self.root))

    def close(self) -> None:
        self.closed = True
        for log in (*self._retired, self.log):
            log.close()

    def __enter__(self) -> Quest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _init_repository(root: Path) -> None:
    """An empty quest repository at ``root`` (its files come from the log), made once
    however many processes of this machine open the quest first at the same time."""
    import fcntl

    import pygit2

    root.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(root.parent / f".{root.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if (root / ".git").is_dir():
            return  # another process made it while we waited
        root.mkdir(exist_ok=True)
        pygit2.init_repository(str(root), initial_head="main")
        write_atomic(root / ".gitignore", _GITIGNORE.encode())
    finally:
        os.close(fd)  # (releases the lock)


def _fresh_id(quests_dir: Path, title: str, taken: Callable[[str], bool]) -> str:
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")[:40].strip("-") or "quest"
    while True:
        candidate = f"{slug}-{secrets.token_hex(2)}"
        if not (quests_dir / candidate).exists() and not taken(candidate):  # (another home's, on a shared store)
            return candidate

