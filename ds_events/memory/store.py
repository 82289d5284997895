"""Where memory lives: a quest's log, the global log under ``DS_HOME``, other quests.

:class:`MemoryStore` bundles one memory log with its live view, its search index and
the directory its cards are materialised in. :class:`MemoryContext` is what services
work through: the bound quest's store, the global store (opened on first use), and,
when ``memory.shared_across_quests`` is on, other quests' stores, read-only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ds_events.config import MemoryConfig
from ds_events.errors import Invalid, NotFound
from ds_events.home import Home, Quest
from ds_events.log import LogError
from ds_events.paths import confined, read_confined
from ds_events.store import EventStore, StoreTransaction
from ds_events.stores import GLOBAL_LOG, is_file_store, local_dir
from ds_events.views import Views
from projections.memory import GLOBAL_PROJECTION, PROJECTION, Card, MemoryState, card_path, render_card

from .index import MemoryIndex

__all__ = ["MemoryStore", "MemoryContext", "Drift", "SCOPES", "INDEX_FILE"]

SCOPES = ("quest", "global", "both")
INDEX_FILE = "memory_index.sqlite"
DIGEST = "MEMORY.md"  # rendered at the store root next to the cards


@dataclass(frozen=True)
class Drift:
    """A card file that differs from what the log says it should be."""

    card_id: str | None
    path: str  # relative to the store root
    problem: str  # modified | missing | untracked | link (a symlink, or behind one, never read)


# How far (in events) a write lets the search index lag before folding the news into it.
# The write's near-duplicate check compares the cards of those events itself (a few
# word-set comparisons); searches always catch the index up first. Folding 16 cards in
# one SQLite transaction costs about what two cost one at a time.
INDEX_LAG = 16


class MemoryStore:
    """One memory log: its view, index and card files."""

    def __init__(
        self,
        *,
        scope: str,
        name: str,
        log: EventStore,
        views: Views,
        root: Path,
        prefix: str,
        projection_name: str,
        quest: Quest | None = None,
        read_only: bool = False,
    ) -> None:
        self.scope = scope  # quest | global
        self.name = name  # the quest id, or "global"
        self.log = log
        self.views = views
        self.root = root
        self.prefix = prefix
        self.projection_name = projection_name
        self.quest = quest
        self.read_only = read_only
        self.index = MemoryIndex(local_dir(log, root) / INDEX_FILE, log)

    @property
    def memory_dir(self) -> Path:
        return self.root / self.prefix if self.prefix else self.root

    def state(self) -> MemoryState:
        self.views.catch_up()
        # The views hold states by name; this store's name is a memory projection's.
        return cast(MemoryState, self.views.state(self.projection_name))

    @contextlib.contextmanager
    def lent_state(self, *, catch_up: bool = True) -> Iterator[MemoryState]:
        """The caught-up state for the length of the block, without copying it
        (:meth:`Views.lend`): what a write reads under the log's lock. Keep only its
        immutable records (cards) past the block.

        ``catch_up=False`` skips reading the log for news, for a caller that knows the
        views are current: inside :meth:`transaction`, which caught them up when it took
        the lock (nobody appends until it ends), or right after one, whose
        materialisation caught them up past its own events."""
        if catch_up:
            self.views.catch_up()
        with self.views.lend(self.projection_name) as state:
            yield state

    def card(self, card_id: str, *, catch_up: bool = True) -> Card | None:
        """One card of the caught-up state (None if unknown), without handing the whole
        state out (see :meth:`lent_state`)."""
        with self.lent_state(catch_up=catch_up) as state:
            return state.cards.get(card_id)

    def synced_index(self) -> MemoryIndex:
        self.index.sync()
        return self.index

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StoreTransaction]:
        """Hold this log's append lock; the views are caught up inside.

        The index is caught up *before* the lock is taken, never while it is held: an
        index that is busy (another process folding a long log into it) must not hold
        up every appender of the quest. Inside, the index may lag by what others
        appended in between: the caught-up state names those cards
        (:func:`projections.memory.changed_after`), so checks made under the lock
        (near-duplicates) see every card. Nor is the index updated after
        the append: once the events are in the log the call has succeeded, and an
        index failing at that moment must not turn it into a reported failure. The
        next read (or write) catches it up.
        """
        if self.read_only:
            raise Invalid(f"memory of quest {self.name!r} is visible read-only here", code="read_only")
        self.index.sync(max_lag=INDEX_LAG)
        if self.quest is not None:
            with self.quest.transaction() as txn:
                yield txn
        else:
            with self.log.transaction() as txn:
                self.views.catch_up()
                yield txn
            self.views.materialise(txn.appended)

    def rel_path(self, card: Card) -> str:
        """The card's file relative to the store root."""
        return card_path(card, self.prefix)

    def rel_path_for(self, kind: str, card_id: str) -> str:
        """Where a card that is not written yet will be materialised (as :meth:`rel_path`)."""
        return f"{self.prefix}{kind}/{card_id}.md"

    def display_path(self, card: Card) -> str:
        """What callers see: relative to the quest root, or absolute for global cards."""
        rel = self.rel_path(card)
        return rel if self.scope == "quest" and not self.read_only else str(self.root / rel)

    def file_of(self, card: Card) -> Path:
        """Where the card's file is. Read it with :meth:`read_file`, never directly."""
        return self.root / self.rel_path(card)

    def read_file(self, rel: str) -> bytes | None:
        """The bytes of a file under the store root (None if absent), never through a link.

        The memory directory is shared with an agent that runs shell commands, so a
        card file (or a directory on its way) may be a planted symlink: that raises
        :class:`Invalid` ``path_outside_root`` instead of reading what it points to.
        """
        return read_confined(self.root, rel)

    def check_materialisable(self, *rels: str) -> None:
        """Refuse (``path_outside_root``) unless every file in ``rels`` and the digest
        could be written inside the root. Called before appending the events that will
        materialise them, so a refused call appends nothing."""
        for rel in (*rels, DIGEST):
            confined(self.root, rel)

    def drift(self, state: MemoryState | None = None) -> list[Drift]:
        """Cards whose file was edited or deleted by hand, card-like files the log never
        wrote, and card files that are (or lie behind) symbolic links, which are never read."""
        state = state if state is not None else self.state()
        found: list[Drift] = []
        for card in state.cards.values():
            rel = self.rel_path(card)
            try:
                on_disk = self.read_file(rel)
            except Invalid:
                found.append(Drift(card.id, rel, "link"))
                continue
            if on_disk is None:
                found.append(Drift(card.id, rel, "missing"))
            elif on_disk != render_card(card):
                found.append(Drift(card.id, rel, "modified"))
        # glob follows a linked kind directory; such files are reported, not read.
        for path in sorted(self.memory_dir.glob("*/*.md")):
            if path.stem in state.cards or path.name.startswith("."):
                continue
            rel = str(path.relative_to(self.root))
            found.append(Drift(None, rel, "link" if _is_link(self.root, rel) else "untracked"))
        return found

    def close(self) -> None:
        self.index.close()
        if self.quest is None:
            self.log.close()


@dataclass
class MemoryContext:
    """The stores a service call can reach from one bound quest."""

    quest: Quest
    actor: str = "cli"
    _global: MemoryStore | None = None
    _quest_store: MemoryStore | None = None
    _shared: dict[str, MemoryStore] = field(default_factory=dict)
    _config: tuple[tuple[int, int, int] | None, MemoryConfig] | None = None

    @property
    def home(self) -> Home:
        return self.quest.home

    @property
    def config(self) -> MemoryConfig:
        """The home config's ``memory`` section, parsed again only when the file changed
        (every search asks for it; parsing the YAML took most of a search's time)."""
        try:
            st = os.stat(self.home.config_path)
            key: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            key = None
        if self._config is None or self._config[0] != key:
            self._config = (key, self.home.config().memory)
        return self._config[1]

    def store(self, scope: str) -> MemoryStore:
        """The writable store of ``scope`` (``quest`` or ``global``)."""
        if scope == "quest":
            if self._quest_store is None:
                q = self.quest
                self._quest_store = MemoryStore(
                    scope="quest", name=q.id, log=q.log, views=q.views, root=q.root, prefix="memory/",
                    projection_name=PROJECTION.name, quest=q,
                )  # fmt: skip
            return self._quest_store
        if scope == "global":
            if self._global is None:
                gdir = self.home.global_memory_dir
                # Signed with the home's key like every quest log, so its head anchor vouches for it.
                log = self.home.open_log(GLOBAL_LOG, actor=self.actor)
                views = Views(log, gdir, projections=[GLOBAL_PROJECTION]).load()
                if not is_file_store(self.home.store_url()) and views.last_seq and not (gdir / DIGEST).exists():
                    # A shared store's global memory this machine never wrote out: its
                    # cards are this machine's projection of the log, written now.
                    views.materialise(full=True)
                self._global = MemoryStore(
                    scope="global", name="global", log=log, views=views, root=gdir, prefix="",
                    projection_name=GLOBAL_PROJECTION.name,
                )  # fmt: skip
            return self._global
        raise Invalid(f"unknown scope {scope!r}: use quest or global", code="invalid_scope")

    def readable(self, scope: str) -> list[MemoryStore]:
        """Stores searched for ``scope`` (``quest``, ``global`` or ``both``), own quest first."""
        check_scope(scope)
        stores: list[MemoryStore] = []
        if scope in ("quest", "both"):
            stores.append(self.store("quest"))
            if self.config.shared_across_quests:
                stores.extend(self._shared_stores())
        if scope in ("global", "both"):
            stores.append(self.store("global"))
        return stores

    def find(self, card_id: str, scope: str = "both") -> tuple[MemoryStore, Card]:
        """The card ``card_id`` (or record ``mem-NNN``) in the stores of ``scope``."""
        for store in self.readable(scope):
            state = store.state()
            cid = state.records.get(card_id, card_id)
            card = state.cards.get(cid)
            if card is not None:
                return store, card
        raise NotFound(f"no card {card_id!r} in {scope} memory: search or list_recent to find ids", code="unknown_card")

    def close(self) -> None:
        for store in [self._global, self._quest_store, *self._shared.values()]:
            if store is not None:
                store.close()
        self._global, self._quest_store = None, None
        self._shared.clear()

    def _shared_stores(self) -> list[MemoryStore]:
        out = []
        for qid in self.home.quest_ids():
            if qid == self.quest.id:
                continue
            if qid not in self._shared:
                root = self.home.quest_root(qid)
                try:
                    log = self.home.open_log(qid, actor=self.actor, recover=False)
                except LogError:
                    continue  # a quest being repaired is skipped, never modified from here
                views = Views(log, root, projections=[PROJECTION]).load(use_snapshots=False)
                self._shared[qid] = MemoryStore(
                    scope="quest", name=qid, log=log, views=views, root=root, prefix="memory/",
                    projection_name=PROJECTION.name, read_only=True,
                )  # fmt: skip
            out.append(self._shared[qid])
        return out


def _is_link(root: Path, rel: str) -> bool:
    try:
        return confined(root, rel).is_symlink()
    except Invalid:
        return True


def check_scope(scope: str, allowed: tuple[str, ...] = SCOPES) -> str:
    if scope not in allowed:
        raise Invalid(f"unknown scope {scope!r}: use {', '.join(allowed)}", code="invalid_scope")
    return scope
