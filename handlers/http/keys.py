"""The app's typed keys (aiohttp's ``AppKey``): what handlers read as ``request.app[KEY]``.

``HOME`` and ``SETTINGS`` are set when the app is built (:func:`~handlers.http.app.make_app`);
``HUB`` exists from the app's startup to its cleanup (see ``app.py``)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from ds_events.home import Home

from .doctor_runs import DoctorRuns
from .hub import Hub
from .settings import Settings

__all__ = ["HOME", "HUB", "SETTINGS", "STATIC_FILES", "DOCTOR"]

HOME = web.AppKey("ds_home", Home)
HUB = web.AppKey("ds_hub", Hub)
SETTINGS = web.AppKey("ds_settings", Settings)
# The page's files by name, as found in static/ when the app was built (page.py).
STATIC_FILES = web.AppKey("ds_static_files", dict[str, Path])
# The doctor runs of GET /api/doctor (one at a time, a fresh report shared).
DOCTOR = web.AppKey("ds_doctor", DoctorRuns)
