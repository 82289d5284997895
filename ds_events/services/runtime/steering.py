"""Pause, stop and resume a quest: the record, and what a paused quest must not keep
running (its shell sessions, its agent's process group)."""

from __future__ import annotations

from ds_events.events import Event
from ds_events.home import Quest
from ds_events.services.bash import kill_quest_sessions
from ds_events.services.quest.commands import Control
from ds_events.services.quest.lifecycle import record_control

from .turns import stop_runner

__all__ = ["control"]


def control(quest: Quest, cmd: Control) -> Event:
    """Record the control action; on pause or stop also end the quest's shell sessions
    (TERM, then KILL) and the running turn's process group (its host sees it end and
    records the turn interrupted or cancelled)."""
    event = record_control(quest, cmd)
    if cmd.action in ("pause", "stop"):
        kill_quest_sessions(quest, reason=f"quest_{cmd.action}")
        stop_runner(quest, grace_seconds=quest.home.config().runner.kill_grace_seconds)
    return event
