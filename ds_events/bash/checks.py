"""Checks of bash_exec requests: each raises :class:`Invalid` with a stable code."""

from __future__ import annotations

import errno
import math
import os
import re
from pathlib import Path

from ds_events.errors import Invalid
from ds_events.home import Quest

__all__ = [
    "resolve_workdir",
    "check_env",
    "check_seconds",
    "check_count",
    "check_seq",
    "MAX_LINES",
    "MAX_ENV_KEYS",
]

MAX_LINES = 2000
MAX_ENV_KEYS = 200
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED_ENV = frozenset({"DS_BASH_SESSION_ID", "DS_QUEST_ID", "DS_QUEST_ROOT"})


def resolve_workdir(quest: Quest, workdir: str | None) -> tuple[Path, str]:
    """``(real directory, what to record)`` for a workdir inside the quest or a worktree.

    Relative paths are taken from the quest root; ``..`` is refused outright, then the
    real path (symlinks resolved) must lie inside the quest or one of its git worktrees,
    and not inside the ``.git`` or ``.ds`` area of either (git's and the runtime's own
    files, which the artifact paths refuse too). Worktrees are matched first: they live
    under ``.ds/worktrees/`` and are a command's place to run. Whatever the operating
    system says about the path (too long, a symlink loop, not encodable) becomes a
    structured :class:`Invalid`.
    """
    root = quest.root.resolve()
    if workdir is None or workdir in ("", "."):
        return root, "."
    if not isinstance(workdir, str) or "\x00" in workdir:
        raise Invalid("workdir must be a path string", code="invalid_workdir")
    shown = _shown(workdir)
    if ".." in Path(workdir).parts:
        raise Invalid(f"workdir {shown!r} uses '..': give a path inside the quest", code="workdir_outside_quest",
                      workdir=shown)
    candidate = Path(workdir) if os.path.isabs(workdir) else root / workdir
    real = _real_directory(candidate, shown)
    in_root = real.relative_to(root) if real == root or root in real.parents else None
    if in_root is not None and not _OWNED_AREAS.intersection(in_root.parts):
        return real, str(in_root)  # the common case: no worktree can change the answer
    for tree in _worktrees(quest):
        if real == tree or tree in real.parents:
            _refuse_owned_area(real.relative_to(tree), shown)
            return real, str(in_root) if in_root is not None else str(real)
    if in_root is not None:
        _refuse_owned_area(in_root, shown)
        return real, str(in_root)
    raise Invalid(
        f"workdir {shown!r} is outside the quest repository and its worktrees", code="workdir_outside_quest",
        workdir=shown,
    )


def check_env(env: object) -> dict[str, str]:
    """Extra environment variables: valid names, string values, none of ours."""
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise Invalid("env must be an object of NAME: value strings", code="invalid_env")
    if len(env) > MAX_ENV_KEYS:
        raise Invalid(f"env holds at most {MAX_ENV_KEYS} variables", code="invalid_env")
    bad = sorted(str(k) for k in env if not isinstance(k, str) or not _ENV_NAME.match(k))
    if bad:
        raise Invalid(
            f"invalid environment variable name(s) {', '.join(map(repr, bad))}: use letters, digits and '_', "
            "not starting with a digit", code="invalid_env_name", names=bad,
        )
    if _RESERVED_ENV & env.keys():
        raise Invalid(f"{', '.join(sorted(_RESERVED_ENV & env.keys()))} are set by bash_exec; leave them out of env",
                      code="invalid_env_name", names=sorted(_RESERVED_ENV & env.keys()))
    out: dict[str, str] = {}
    for key, value in env.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise Invalid(f"env value of {key} must be a string", code="invalid_env_value", name=key)
        text = str(value)
        if "\x00" in text:
            raise Invalid(f"env value of {key} holds a NUL byte", code="invalid_env_value", name=key)
        out[key] = text
    return out


def check_seconds(name: str, value: object, *, allow_zero: bool) -> float | None:
    """None, or a finite number of seconds (> 0, or >= 0 with ``allow_zero``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Invalid(f"{name} must be a number of seconds", code="invalid_timeout", field=name)
    if value < 0 or (value == 0 and not allow_zero):
        raise Invalid(f"{name} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value}",
                      code="invalid_timeout", field=name)
    return float(value)


def check_count(name: str, value: object) -> int | None:
    """None, or a line count from 1 to :data:`MAX_LINES`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINES:
        raise Invalid(f"{name} must be a whole number from 1 to {MAX_LINES}", code="invalid_window", field=name)
    return value


def check_seq(name: str, value: object) -> int | None:
    """None, or a line seq >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(f"{name} must be a line seq >= 0", code="invalid_window", field=name)
    return value


# -- private helpers -------------------------------------------------------------------

_OWNED_AREAS = frozenset({".git", ".ds"})
_SHORT = 80  # characters of a refused workdir quoted back in a message


def _shown(workdir: str) -> str:
    """``workdir`` as quoted back in an error: shortened, and encodable as UTF-8 JSON."""
    short = workdir if len(workdir) <= _SHORT else workdir[:_SHORT] + "..."
    return short.encode("utf-8", "backslashreplace").decode("utf-8")


def _real_directory(candidate: Path, shown: str) -> Path:
    """The resolved, existing directory ``candidate`` names, or :class:`Invalid`."""
    try:
        real = candidate.resolve(strict=True)
        is_dir = real.is_dir()
    except (FileNotFoundError, NotADirectoryError):
        raise Invalid(f"workdir {shown!r} does not exist", code="workdir_not_found", workdir=shown) from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            why = "is too long for the file system (at most 255 bytes a name, 4096 in all)"
        else:
            why = f"cannot be used: {exc.strerror or exc}"
        raise Invalid(f"workdir {shown!r} {why}", code="invalid_workdir", workdir=shown) from None
    except RuntimeError:  # pathlib's report of a symlink loop (ELOOP) in Python 3.11
        raise Invalid(f"workdir {shown!r} is a loop of symbolic links", code="invalid_workdir",
                      workdir=shown) from None
    except ValueError as exc:  # a name the file system encoding cannot express (lone surrogates)
        raise Invalid(f"workdir {shown!r} cannot be used as a path: {exc}", code="invalid_workdir",
                      workdir=shown) from None
    if not is_dir:
        raise Invalid(f"workdir {shown!r} is not a directory", code="workdir_not_directory", workdir=shown)
    return real


def _refuse_owned_area(rel: Path, shown: str) -> None:
    """Refuse a directory in (or under) the ``.git`` or ``.ds`` of a tree."""
    if rel.parts and rel.parts[0] in _OWNED_AREAS:
        raise Invalid(
            f"workdir {shown!r} is inside {rel.parts[0]}/, which git and the runtime own: "
            "run commands in the quest's own directories (or a worktree's)",
            code="workdir_not_allowed", workdir=shown, area=rel.parts[0],
        )



def _worktrees(quest: Quest) -> list[Path]:
    try:
        repo = quest.repo()
        return [Path(repo.lookup_worktree(name).path).resolve() for name in repo.list_worktrees()]
    except Exception:  # whatever git says about them: no worktrees is the safe answer
        return []
