"""Query-parameter parsing shared by the routes: every bad value is a 400 with a code."""

from __future__ import annotations

from typing import overload

from aiohttp import web

from ds_events.errors import Invalid

__all__ = ["int_param", "flag_param"]


@overload
def int_param(request: web.Request, name: str, default: int, *, lo: int = 0, hi: int | None = None, code: str = ...) -> int: ...
@overload
def int_param(
    request: web.Request, name: str, default: None, *, lo: int = 0, hi: int | None = None, code: str = ...
) -> int | None: ...


def int_param(
    request: web.Request, name: str, default: int | None, *, lo: int = 0, hi: int | None = None, code: str = "invalid_argument"
) -> int | None:
    """``?name=`` as an int in ``[lo, hi]``, ``default`` when absent, else ``Invalid(code)``."""
    query = request.query
    if name not in query:
        return default
    raw = query[name]
    try:
        value = int(raw)
    except ValueError:
        raise Invalid(f"{name} must be an integer, got {raw!r}", code=code, argument=name) from None
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}-{hi}" if hi is not None else f">= {lo}"
        raise Invalid(f"{name} must be {bound}, got {value}", code=code, argument=name)
    return value


def flag_param(request: web.Request, name: str) -> bool:
    """``?name=1|true|0|false`` (absent: False)."""
    raw = request.query.get(name)
    if raw is None:
        return False
    if raw not in ("1", "true", "0", "false"):
        raise Invalid(f"{name} must be 1 or 0, got {raw!r}", code="invalid_argument", argument=name)
    return raw in ("1", "true")
