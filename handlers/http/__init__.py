"""The daemon's HTTP adapter: JSON routes, the live event stream, Canvas views.

Everything here is layer 4: it decodes a request, calls one service or query, and
encodes the answer. Writes go through ``ds_events.services``; the only long-lived
state is the open quests (their in-memory views) and one log follower per quest.
"""

from .app import make_app

__all__ = ["make_app"]
