"""Where a turn's prompt is stored: ``<quest>/.ds/runs/<run_id>/prompt.md``, the run id
checked to be one safe path component and the path confined to the quest root."""

from __future__ import annotations

import re
from pathlib import Path

from ds_events.errors import Invalid
from ds_events.home import Quest
from ds_events.paths import confined

__all__ = ["check_run_id", "prompt_path"]

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is one safe path component, else ``invalid_run_id``."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or ".." in run_id:
        raise Invalid(
            f"invalid run id {run_id!r}: use 1-128 letters, digits, '.', '-' or '_', starting with a letter or digit",
            code="invalid_run_id",
        )
    return run_id


def prompt_path(quest: Quest, run_id: str) -> Path:
    """Where the prompt of ``run_id`` is stored (confined to the quest root)."""
    rel = f".ds/runs/{check_run_id(run_id)}/prompt.md"
    try:
        return confined(quest.root, rel, field="run_id")
    except Invalid as exc:  # a planted link under .ds/runs
        raise Invalid(exc.message, code="invalid_run_id") from None

