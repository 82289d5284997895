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
import stat
import tempfile
from pathlib import Path

from .errors import Invalid

__all__ = ["confined", "read_confined", "write_atomic", "check_name_lengths"]

_NAME_MAX = 255


def confined(root: str | os.PathLike[str], rel: str, *, field: str = "path") -> Path:
    """``root / rel``, refusing anything that would land outside ``root``.

    Checked lexically (relative, no ``..``, no NUL, no over-long names), then by walking
    the existing directories from ``root`` without following links; only when the walk
    meets a link (or anything but a directory) is the real path of the nearest existing
    ancestor directory compared with the root's, so a symlinked directory cannot lead
    out, while one that stays inside is allowed. Raises :class:`Invalid`
    (``path_outside_root``).
    """
    root = Path(root)
    relpath = Path(rel) if isinstance(rel, str) else None
    parts = relpath.parts if relpath is not None else ()
    if relpath is None or not rel or "\x00" in rel or relpath.is_absolute() or ".." in parts:
        raise Invalid(f"{field} {rel!r} must be a relative path inside {root.name}", code="path_outside_root", field=field)
    _check_parts(parts, field)
    target = root / relpath
    if _no_link_on_the_way(root, parts):
        return target
    # A link somewhere on the way (or something odd, such as a file where a directory
    # should be): it may still lead inside the root, which the real paths decide.
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
    _check_parts(Path(rel).parts, field)


def _check_parts(parts: tuple[str, ...], field: str) -> None:
    for part in parts:
        if len(part) * 4 > _NAME_MAX and len(part.encode("utf-8", "surrogateescape")) > _NAME_MAX:
            raise Invalid(f"{field}: a path component is longer than {_NAME_MAX} bytes", code="path_too_long", field=field)


# Directories are opened only to be walked through: O_PATH (Linux) needs no read
# permission and reads nothing.
_WALK = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC


def _no_link_on_the_way(root: Path, parts: tuple[str, ...]) -> bool:
    """Whether ``root / *parts`` is plainly inside ``root``: each directory on the way that
    exists is a real directory (opened relative to the one before, never following a
    link) and the last part, if it exists, is not a link. Then no real path can lead
    out, and :func:`confined` skips resolving them (two ``realpath`` calls stat every
    component of the absolute path, most of a card write's path checks). False for
    anything else, which the real paths then decide."""
    if not parts:
        return False
    try:
        fd = os.open(root, _WALK)
    except OSError:
        return False
    try:
        for name in parts[:-1]:
            try:
                below = os.open(name, _WALK | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                return True  # nothing exists below here, so no link either
            except OSError:
                return False  # a link (ELOOP / ENOTDIR under O_PATH), a file in the way, ...
            os.close(fd)
            fd = below
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return not stat.S_ISLNK(st.st_mode)
    finally:
        os.close(fd)


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
