"""Deleting a quest for good: what it removes, and the removal (the runtime's: it ends
the quest's shell sessions and reads the baseline registry, domains above the quest's).

A deletion is not an event: the log it would go into is what goes. It is guarded
instead: refused while a turn runs (``turn_running``: stop the quest first), and
without an explicit confirmation (``confirm_required``, whose details are the plan:
what would be removed). The quest's running shell sessions are killed first (each
waited for, so no monitor appends to a log being removed). Then, under the quest's
log lock (so no host claims a turn meanwhile): the quest directory (its git
repository, files, bash output and, on the file store, its log), the rows of its log
on a database store, and the home's witness of its head (``$DS_HOME/.ds/heads/<quest>.head``).
Baselines it published to the home's registry stay there: the registry is another
append-only log, and other quests may have attached them; the plan names them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from ds_events.errors import Conflict, Invalid
from ds_events.home import Home, Quest
from ds_events.services.quest.commands import DeletePlan
from ds_events.stores import REGISTRY_LOG, delete_stored_log, display_store, is_file_store

__all__ = ["delete_plan", "delete_quest"]


def delete_plan(quest: Quest) -> DeletePlan:
    """What deleting ``quest`` would remove (nothing is removed)."""
    home = quest.home
    sessions = quest.state("bash_sessions").sessions
    witness = home.log_witness(quest.id)
    url = home.store_url(strict=False)
    return DeletePlan(
        quest_id=quest.id, deleted=False, root=str(quest.root), store="file" if is_file_store(url) else display_store(url),
        events=quest.log.last_seq, bash_sessions=len(sessions),
        running_bash_sessions=sorted(s.id for s in sessions.values() if s.status == "running"),
        git_repo=(quest.root / ".git").exists(), witness=str(witness) if witness.exists() else None,
        registry_entries=_registry_entries(home, quest.id),
    )  # fmt: skip


def delete_quest(quest: Quest, *, confirm: bool) -> DeletePlan:
    """Delete ``quest`` (see the module docstring) and close it; returns what was
    removed. A caller that keeps quests open forgets this one (closing it again is a
    no-op)."""
    plan = delete_plan(quest)
    _refuse_if_running(quest)
    if not confirm:
        raise Invalid(
            f"deleting quest {quest.id!r} needs a confirmation (--yes, or confirm: true): it would remove "
            + describe(plan), code="confirm_required", plan=plan_dict(plan),
        )  # fmt: skip
    from ds_events.services.bash import KillSession, kill

    for session_id in plan.running_bash_sessions:
        kill(quest, KillSession(id=session_id, force=True, wait=True, reason="quest_deleted"))
    home, url = quest.home, quest.home.store_url()
    # The log's own lock, not the quest's transaction: that one materialises views into
    # the directory on its way out.
    with quest.log.transaction():  # no host claims a turn while the quest goes
        _refuse_if_running(quest)
        if not is_file_store(url):
            delete_stored_log(url, quest.id, wait=home.connection_wait())
        _remove_tree(quest.root)
    quest.close()
    # Closing may have anchored the head once more (the witness, the log's .ds/): gone too.
    _remove_tree(quest.root)
    home.log_witness(quest.id).unlink(missing_ok=True)
    return msgspec.structs.replace(plan, deleted=True)


def describe(plan: DeletePlan) -> str:
    """The plan in one sentence."""
    parts = [f"the quest directory {plan.root}" + (" (a git repository)" if plan.git_repo else "")]
    where = "in it" if plan.store == "file" else f"in {plan.store}"
    parts.append(f"its log of {plan.events} event(s) {where}")
    running = f", {len(plan.running_bash_sessions)} running: killed first" if plan.running_bash_sessions else ""
    parts.append(f"{plan.bash_sessions} bash session(s){running}")
    if plan.witness:
        parts.append(f"the home's witness of its head {plan.witness}")
    kept = (f"; kept: {len(plan.registry_entries)} baseline registry entr(y/ies) it published "
            f"({', '.join(plan.registry_entries)})") if plan.registry_entries else ""  # fmt: skip
    return ", ".join(parts) + kept


def plan_dict(plan: DeletePlan) -> dict[str, object]:
    out: dict[str, object] = msgspec.to_builtins(plan)
    return out


# -- private helpers ----------------------------------------------------------------------


def _refuse_if_running(quest: Quest) -> None:
    running = quest.state("turns").running
    if running is not None:
        raise Conflict(f"turn {running} is running: stop the quest first (`ds control {quest.id} stop`), then delete it",
                       code="turn_running", run_id=running)  # fmt: skip


def _registry_entries(home: Home, quest_id: str) -> list[str]:
    if not home.has_log(REGISTRY_LOG):
        return []
    from ds_events.services.artifacts.registry import registry_state

    state = registry_state(home)
    prefix = f"{quest_id}/"
    return sorted(key[len(prefix):] for key in (state.sources if state else {}) if key.startswith(prefix))


def _remove_tree(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
