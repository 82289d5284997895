"""ds-events: an event-sourced runtime for long-running AI research agents.

Start with :mod:`ds_events.events` (the typed events), :mod:`ds_events.log` (the
append-only log), :mod:`ds_events.home` (quests) and :mod:`ds_events.views` (replay
into projections and materialised files).
"""

__version__ = "0.1.0"
