"""The environment the start-up benchmarks run ``ds`` and the MCP servers in.

An installed package has its modules compiled to bytecode at install time; a checkout
run with ``PYTHONDONTWRITEBYTECODE=1`` (as on the development machines) compiles every
module of ours from source at every start, while the libraries beside it (``mcp``,
``click``) load their bytecode. To compare like with like, the children write and reuse
bytecode under a private cache directory (``PYTHONPYCACHEPREFIX``, removed with the
run; the warm-up round fills it). ``--no-bytecode-cache`` measures the other case.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

__all__ = ["REPO", "child_env"]


def child_env(tmp: Path, *, bytecode_cache: bool = True) -> dict[str, str]:
    """``os.environ`` with this checkout first on the path and, by default, a private
    bytecode cache under ``tmp``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    if bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env
