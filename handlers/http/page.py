"""The web page: ``/`` and the files under ``static/`` (plain ES modules and CSS, shipped
as package data; no build step, nothing fetched from elsewhere, so it works offline).

The page needs no token to load: it holds no data. Every ``/api`` call it makes carries
the token (the page asks for it once, on the first 401, and keeps it for the tab).
Only the files present in ``static/`` when the app is built are served, by exact name:
a request can never name a path outside that directory."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from .keys import STATIC_FILES

__all__ = ["routes", "static_files", "STATIC_DIR", "is_public"]

STATIC_DIR = Path(__file__).resolve().parent / "static"

_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",  # ES modules are refused unless served as JavaScript
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
# Everything the page loads comes from this origin: no inline script, no remote asset.
_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
routes = web.RouteTableDef()


def is_public(path: str) -> bool:
    """The page's own files need no token (only ``/api`` routes do)."""
    return path == "/" or path.startswith("/static/")


def static_files() -> dict[str, Path]:
    """The files the page may load, by name: those in ``static/`` now, of a known type."""
    return {p.name: p for p in STATIC_DIR.iterdir() if p.is_file() and p.suffix in _TYPES}


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    return _send(request.app[STATIC_FILES]["index.html"])


@routes.get("/static/{name}")
async def static(request: web.Request) -> web.Response:
    files = request.app[STATIC_FILES]
    name = request.match_info["name"]
    if name not in files:
        raise web.HTTPNotFound()  # the error middleware answers it as {"error": "not_found", ...}
    return _send(files[name])


def _send(path: Path) -> web.Response:
    # no-cache: the browser revalidates, so an upgraded daemon never serves a stale module
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": _CSP}
    charset = "utf-8" if path.suffix != ".png" else None
    return web.Response(body=path.read_bytes(), content_type=_TYPES[path.suffix], charset=charset, headers=headers)
