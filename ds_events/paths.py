"""Files inside a root that nobody can lead us out of: confinement and atomic writes.

A quest directory is shared with an agent that runs shell commands in it, so any path
component may be a symlink planted to lead a write (or a read) elsewhere. Every
materialised file and every read of a quest file goes through :func:`confined` (the
real path of the parent directory must lie inside the root's real path) and, for
reads, :func:`read_confined` (the file itself is opened with ``O_NOFOLLOW``).
Writes replace the final component with ``os.replace``, which never follows a link.

Callers check a path *before* appending the event that will materialise it, so a
refused path changes nothing.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from .errors import Invalid

__all__ = ["confined", "read_confined", "write_atomic", "check_name_lengths"]

_NAME_MAX = 255


def confined(root: str | os.PathLike[str], rel: str, *, field: str = "path") -> Path:
    """``root / rel``, refusing anything that would land outside ``root``.

    Checked lexically (relative, no ``..``, no NUL, no over-long names) and then through
    the real path of the nearest existing ancestor directory, so a symlinked directory
    cannot lead out either. Raises :class:`Invalid` (``path_outside_root``).
    """
    root = Path(root)
    parts = Path(rel).parts if isinstance(rel, str) else ()
    if not isinstance(rel, str) or not rel or "\x00" in rel or Path(rel).is_absolute() or ".." in parts:
        raise Invalid(f"{field} {rel!r} must be a relative path inside {root.name}", code="path_outside_root", field=field)
    check_name_lengths(rel, field=field)
    target = root / rel
    base = os.path.realpath(root)
    ancestor = target.parent
    while not ancestor.exists() and ancestor != root and root in ancestor.parents:
        ancestor = ancestor.parent
    real = os.path.realpath(ancestor)
    if real != base and not real.startswith(base + os.sep):
        raise Invalid(
            f"{field} {rel!r} leads outside {root.name} (through a symbolic link at {ancestor.relative_to(root)})",
            code="path_outside_root",
            field=field,
        )
    if target.is_symlink():
        link = os.path.realpath(target)
        if link != base and not link.startswith(base + os.sep):
            raise Invalid(f"{field} {rel!r} is a symbolic link out of {root.name}", code="path_outside_root", field=field)
    return target


def read_confined(root: str | os.PathLike[str], rel: str, *, field: str = "path") -> bytes | None:
    """The bytes of ``root / rel`` (None if there is no such file), never through a link.

    A symlink as the file itself is refused (``O_NOFOLLOW``), as is any directory on the
    way that leads outside ``root`` (:func:`confined`).
    """
    target = confined(root, rel, field=field)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise Invalid(f"{field} {rel!r} is a directory", code="invalid_path", field=field) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Invalid(f"{field} {rel!r} is a symbolic link: refused", code="path_outside_root", field=field) from None
        raise
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read()
    except IsADirectoryError:
        raise Invalid(f"{field} {rel!r} is a directory", code="invalid_path", field=field) from None


def check_name_lengths(rel: str, *, field: str = "path") -> None:
    """Refuse path components longer than the file system allows (255 bytes)."""
    for part in Path(rel).parts:
        if len(part.encode("utf-8", "surrogateescape")) > _NAME_MAX:
            raise Invalid(f"{field}: a path component is longer than {_NAME_MAX} bytes", code="path_too_long", field=field)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file and ``os.replace``: never half-written,
    and a symlink at ``path`` is replaced, not followed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:200]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
