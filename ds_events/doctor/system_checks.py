"""What every quest needs from the machine: the config valid, the store reachable, free
disk under ``DS_HOME``, git and pygit2."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from ds_events.config import Config
from ds_events.errors import Invalid, LogUnavailable
from ds_events.home import Home

from .check import Check
from .limits import DISK_FAIL_BYTES, DISK_WARN_BYTES, VERSION_TIMEOUT

__all__ = ["check_config", "check_store", "check_disk", "check_git", "check_pygit2"]


def check_config(home: Home) -> tuple[Check, Config | None]:
    """The loader's own verdict on ``config.yaml`` (and the config, when it is valid)."""
    try:
        config = home.config()
    except Invalid as exc:
        return Check(name="config", status="fail", detail=f"{exc.code}: {exc.message}",
                     fix=f"fix {exc.details.get('key') or 'the file'} in {home.config_path} "
                         "(`ds config validate` says the same; `ds config set KEY VALUE` checks before writing)"), None  # fmt: skip
    where = str(home.config_path) if home.config_path.is_file() else f"{home.config_path} (absent: every default)"
    return Check(name="config", status="ok", detail=f"{where} is valid"), config


def check_store(home: Home) -> Check:
    """The file store: the home writable. A database: one connection within the
    configured wait, its failure worded as ``log_unavailable`` (reason)."""
    try:
        url = home.store_url(strict=False)
    except Invalid as exc:
        return Check(
            name="store", status="fail", detail=f"{exc.code}: {exc.message}", fix="set DS_STORE or store: to file or postgresql://..."
        )
    if url == "file":
        return _file_store(home)
    from ds_events.stores import stored_log_names

    shown = _without_password(url)
    wait = home.connection_wait()
    try:
        names = stored_log_names(url, wait=wait)
    except ImportError:
        return Check(name="store", status="fail", detail=f"{shown}: the PostgreSQL driver is not installed",
                     fix="python3 -m pip install -e '.[postgresql]'")  # fmt: skip
    except LogUnavailable as exc:
        reason = "" if exc.code == LogUnavailable.code else f" ({exc.code})"
        return Check(name="store", status="fail", detail=f"{LogUnavailable.code}{reason}: {exc}",
                     fix=f"start the server or fix the URL (DS_STORE, or store: in {home.config_path}); "
                         f"log.connection_wait_seconds is {wait:g}")  # fmt: skip
    return Check(name="store", status="ok", detail=f"{shown}: connected, {len(names)} logs")


def check_disk(home: Home) -> Check:
    """Free space on the file system that holds ``DS_HOME`` (its nearest existing parent)."""
    where = _existing(home.root)
    free = shutil.disk_usage(where).free
    detail = f"{_size(free)} free under {where}"
    fix = f"free some space on the file system of {where}, or point DS_HOME elsewhere"
    if free < DISK_FAIL_BYTES:
        return Check(name="disk", status="fail", detail=f"{detail} (under {_size(DISK_FAIL_BYTES)})", fix=fix)
    if free < DISK_WARN_BYTES:
        return Check(name="disk", status="warn", detail=f"{detail} (under {_size(DISK_WARN_BYTES)})", fix=fix)
    return Check(name="disk", status="ok", detail=detail)


def check_git() -> Check:
    """The ``git`` executable: the agents' own shell commands use it (ours use pygit2)."""
    found = shutil.which("git")
    fix = "install git (apt-get install git, brew install git)"
    if found is None:
        return Check(name="git", status="fail", detail="git is not on PATH", fix=fix)
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(name="git", status="fail", detail=f"{found} --version: {exc}", fix=fix)
    if done.returncode != 0:
        return Check(name="git", status="fail", detail=f"{found} --version exited {done.returncode}", fix=fix)
    return Check(name="git", status="ok", detail=f"{done.stdout.strip()} ({found})")


def check_pygit2() -> Check:
    try:
        import pygit2
    except ImportError as exc:
        return Check(name="pygit2", status="fail", detail=f"pygit2 does not import: {exc}", fix="python3 -m pip install 'pygit2>=1.14,<2'")
    return Check(name="pygit2", status="ok", detail=f"pygit2 {getattr(pygit2, '__version__', '?')}, libgit2 {pygit2.LIBGIT2_VERSION}")


# -- private helpers ----------------------------------------------------------------------


def _file_store(home: Home) -> Check:
    where = home.root if home.root.is_dir() else _existing(home.root)
    try:
        with tempfile.NamedTemporaryFile(dir=where, prefix=".ds-doctor-", delete=True):
            pass
    except OSError as exc:
        return Check(name="store", status="fail", detail=f"file store: {where} is not writable ({exc.strerror or exc})",
                     fix=f"fix the permissions of {where}, or point DS_HOME at a writable directory")  # fmt: skip
    if where != home.root:
        return Check(
            name="store", status="ok", detail=f"file store: {home.root} does not exist yet; {where} is writable (ds init makes it)"
        )
    return Check(name="store", status="ok", detail=f"file store: {home.root} is writable")


def _existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _size(n: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))
