"""The type checker and the linter hold the code as it is: zero findings, inside the suite
(so the README's test command and CI run them). Settings live in ``pyproject.toml``:
mypy with ``disallow_untyped_defs`` and ``warn_unused_ignores`` over the source, strict
for the event types, the log and the projections; ruff over the source, tests, benches
and fixtures."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINTED = ["ds_events", "projections", "handlers", "tests", "bench", "fixtures"]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_mypy_finds_nothing_in_the_source() -> None:
    done = _run(sys.executable, "-m", "mypy", "--no-incremental")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout


def test_ruff_finds_nothing() -> None:
    ruff = shutil.which("ruff") or ""
    command = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    done = _run(*command, "check", "--no-cache", *LINTED)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_checkers_report_what_is_planted(tmp_path: Path) -> None:
    """The same settings fail on an unused ignore, an untyped function and an unused import,
    so a green run above means something."""
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    pkg = tmp_path / "ds_events"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "planted.py").write_text("import os\n\n\ndef f(x):\n    return x\n\n\nN: int = 1  # type: ignore[assignment]\n")
    for other in ("projections", "handlers"):
        (tmp_path / other).mkdir()
        (tmp_path / other / "__init__.py").write_text("")
    typed = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert typed.returncode == 1
    assert "[no-untyped-def]" in typed.stdout and "[unused-ignore]" in typed.stdout
    ruff = shutil.which("ruff")
    linted = subprocess.run([ruff or sys.executable, *([] if ruff else ["-m", "ruff"]), "check", "--no-cache", "ds_events"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert linted.returncode == 1 and "F401" in linted.stdout
