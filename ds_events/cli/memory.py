"""`ds memory ...` commands. Their issue fills this module in."""

from __future__ import annotations

from .common import cli

__all__ = ["group"]


@cli.group(name="memory")
def group() -> None:
    """Not implemented yet."""
