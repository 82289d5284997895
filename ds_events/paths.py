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
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

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
    """Write ``data`` to ``path`` via a temp file and a rename: never half-written, and a
    symlink at ``path`` is replaced, not followed.

    A regular file already at ``path`` is swapped out (``renameat2`` with
    ``RENAME_EXCHANGE``, where the system has it) and then deleted, rather than renamed
    over: ext4 starts writing the new file's data back on a rename over an existing file
    (``auto_da_alloc``) and waits for the disk queue to take it, which under other
    processes' I/O took 0.4-4 ms where the swap takes 0.05 ms. Readers still see the old
    bytes or the new, never neither. Nothing is synced, as before: after a power cut the
    file may be old, new or empty (as a file written under a new name always could be).
    Every caller writes what the log rebuilds (materialised views, snapshots, caches) or
    a file that did not exist; a file that must survive a power cut needs its own sync."""
    path = Path(path)
    fd, tmp = _create_temp(path)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        if not _swap(tmp, path):
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _create_temp(path: Path) -> tuple[int, str]:
    """A new empty file (mode 0600, as ``tempfile.mkstemp`` makes it) next to ``path``,
    the parent directories made if missing."""
    prefix = f"{path.parent}{os.sep}.{path.name[:200]}."
    for attempt in range(100):
        tmp = f"{prefix}{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600), tmp
        except FileNotFoundError:
            if attempt:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", prefix)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_renameat2: Any = None  # resolved on first use: False where the system has none


def _swap(tmp: str, path: Path) -> bool:
    """Exchange ``tmp`` with the regular file at ``path`` and delete the old one; False
    (nothing done) where there is no regular file there, or no way to exchange."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False  # nothing, a link or a directory: os.replace's answer stands
    except OSError:
        return False
    exchange = _exchange_function()
    if exchange is None or exchange(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(path), _RENAME_EXCHANGE) != 0:
        return False  # no such call here, or this file system refuses it
    try:
        os.unlink(tmp)  # the old file, now under the temporary name
    except IsADirectoryError:
        # A directory was put at ``path`` since the lstat: put it back, and let
        # os.replace refuse as it would have.
        exchange(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(path), _RENAME_EXCHANGE)
        return False
    return True


def _exchange_function() -> Any:
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes  # only here: most processes never replace a file

                fn = ctypes.CDLL(None, use_errno=True).renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _renameat2 = fn
            except (OSError, AttributeError):
                pass
    return _renameat2 or None
