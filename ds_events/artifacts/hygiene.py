"""Checkpoint hygiene: which files of a working tree a checkpoint commits.

A checkpoint never commits the runtime's ``.ds/`` working areas, virtual environments
(a directory holding ``pyvenv.cfg`` or ``bin/activate``), caches, nested repositories,
or files larger than the configured limit. Such paths are reported (so the agent learns
why a file is missing from the commit); paths the repository's ``.gitignore`` excludes
are left out quietly, as git would, unless they are already tracked.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

import pygit2

from ds_events.events.artifact import SkippedPath

__all__ = ["Scan", "scan_worktree", "CACHE_DIRS", "MAX_REPORTED"]

CACHE_DIRS = frozenset(
    {
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".ipynb_checkpoints",
        ".tox",
        ".nox",
        ".cache",
        "node_modules",
        "wandb",
    }
)
_CACHE_SUFFIXES = (".pyc", ".pyo")
MAX_REPORTED = 200  # skipped entries listed in a result / event; the total is always given


@dataclass
class Scan:
    files: list[str] = field(default_factory=list)  # repo-relative posix paths to commit
    skipped: list[SkippedPath] = field(default_factory=list)
    skipped_total: int = 0

    def skip(self, path: str, reason: str, size: int | None = None) -> None:
        self.skipped_total += 1
        if len(self.skipped) < MAX_REPORTED:
            entry: SkippedPath = {"path": path, "reason": reason}
            if size is not None:
                entry["size"] = size
            self.skipped.append(entry)


def scan_worktree(repo: pygit2.Repository, max_file_bytes: int) -> Scan:
    """Walk ``repo``'s working directory and decide, per path, commit or skip."""
    workdir = repo.workdir.rstrip("/")
    tracked = {entry.path for entry in repo.index}
    scan = Scan()
    for top, dirs, names in os.walk(workdir):
        rel_top = os.path.relpath(top, workdir)
        prefix = "" if rel_top == "." else rel_top.replace(os.sep, "/") + "/"
        kept_dirs = []
        for name in sorted(dirs):
            rel = prefix + name
            full = os.path.join(top, name)
            if os.path.islink(full):
                names.append(name)  # a symlink to a directory is committed as a link
                continue
            reason = _dir_reason(rel, full)
            if reason is not None:
                if reason != "git":
                    scan.skip(rel + "/", reason)
            elif repo.path_is_ignored(rel + "/") and not _tracked_under(tracked, rel + "/"):
                continue
            else:
                kept_dirs.append(name)
        dirs[:] = kept_dirs
        for name in sorted(names):
            rel = prefix + name
            try:
                info = os.lstat(os.path.join(top, name))
            except FileNotFoundError:
                continue  # removed while we walked
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                continue
            if name.endswith(_CACHE_SUFFIXES):
                scan.skip(rel, "cache")
            elif stat.S_ISREG(info.st_mode) and info.st_size > max_file_bytes:
                scan.skip(rel, "too_large", info.st_size)
            elif rel not in tracked and repo.path_is_ignored(rel):
                continue
            else:
                scan.files.append(rel)
    return scan


def _dir_reason(rel: str, full: str) -> str | None:
    name = rel.rsplit("/", 1)[-1]
    if name == ".git":
        return "git"
    if rel == ".ds":
        return "ds_working_area"
    if name in CACHE_DIRS:
        return "cache"
    if os.path.isfile(os.path.join(full, "pyvenv.cfg")) or os.path.isfile(os.path.join(full, "bin", "activate")):
        return "virtualenv"
    if os.path.exists(os.path.join(full, ".git")):
        return "nested_repository"
    return None


def _tracked_under(tracked: set[str], prefix: str) -> bool:
    return any(path.startswith(prefix) for path in tracked)
