"""What a web page on another origin could send never reaches a route.

The daemon listens on loopback, often without a token, so the threat is not a stranger
on the network but a page the user has open in a browser on the same machine. A page can
make the browser send requests to ``http://127.0.0.1:PORT`` without asking anyone:

- "simple" cross-origin POSTs, whose body is ``text/plain``,
  ``application/x-www-form-urlencoded`` or ``multipart/form-data`` (a form, or
  ``fetch`` with ``mode: "no-cors"``): no CORS preflight, and the request is sent even
  though the page cannot read the answer — enough to post a message or stop a quest;
- requests under a name it controls (DNS rebinding: ``rebind.evil.example`` first
  resolves to the attacker's server, then to 127.0.0.1), which the browser treats as
  same-origin, so the page can read every answer.

Every request passes these checks, in this order, before any route (and before the
token check, so a page learns nothing from it either):

1. ``Host`` (421 ``misdirected_request``, naming the allowed hosts) must be one of the
   daemon's own names — ``127.0.0.1``, ``localhost``, ``[::1]``, the configured
   ``--host`` and the address the connection arrived at (for a wildcard ``--host
   0.0.0.0``: the interface address a client dialled) — with the port the connection
   arrived at. The port comes from the connection's own socket, not from a setting: it
   is the port the daemon really listens on, including when ``--port 0`` let the
   system choose it, and no configuration can disagree with it. A name a rebinding
   attacker controls is never on the list.
2. ``Origin`` (403 ``forbidden_origin``), when present, must be the daemon's own origin
   (``http://`` + an allowed host as above). Browsers send it on every POST and on
   every cross-origin ``fetch``; the page's own calls carry its own origin, which passes.
   ``Origin: null`` is refused: browsers send it from sandboxed iframes, ``file:`` and
   ``data:`` documents and after cross-origin redirects — never from this daemon's
   page, and a sandboxed iframe is exactly how a hostile page would hide its origin.
   (The page sets no ``no-referrer`` policy, which would make its own POSTs say
   ``null``.) Clients that are not browsers (curl, scripts, the tests) send no
   ``Origin`` and are not affected.
3. ``Sec-Fetch-Site`` (403 ``forbidden_origin``) on ``/api`` routes: ``cross-site`` or
   ``same-site`` (another port of localhost is the same site) means the browser says
   another page made this request — refused even when no ``Origin`` was sent (a GET
   from an ``<img>`` or ``<script>`` tag sends none). ``same-origin`` (the page) and
   ``none`` (the user typed the address) pass. The page's own files (``/`` and
   ``/static/``) hold no data and are not checked, so a link from elsewhere to the
   page still opens it.
4. ``Content-Type`` (415 ``unsupported_media_type``) of every POST, PUT, PATCH and
   DELETE must be ``application/json`` (a ``charset=utf-8`` parameter is allowed, any
   other charset is not), with or without a body. No browser sends that type to
   another origin without a CORS preflight, which this daemon never grants (a
   preflight carries a foreign ``Origin``: refused at step 2).

A configured token is still required after these checks (``auth.py``).
"""

from __future__ import annotations

import ipaddress

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from .errors import error_response
from .page import is_public

__all__ = ["guard_middleware", "LOOPBACK_NAMES", "UNSAFE_METHODS"]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FOREIGN_SITES = frozenset({"cross-site", "same-site"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def guard_middleware(host: str | None = None) -> Middleware:
    """The middleware refusing requests by ``Host``, ``Origin``, ``Sec-Fetch-Site`` and
    ``Content-Type`` (see the module docstring); ``host``: the address the daemon was told
    to listen on (``--host``), one more of its own names."""
    names = frozenset(_name(n) for n in (*LOOPBACK_NAMES, *([host] if host else [])))

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        refusal = _refusal(request, names)
        return refusal if refusal is not None else await handler(request)

    return guard


def _refusal(request: web.Request, names: frozenset[str]) -> web.Response | None:
    local = _local_address(request)
    own = names | {local[0]} if local else names
    port = local[1] if local else None
    allowed = sorted(_host_of(n, port) for n in own) if port is not None else []
    given_host = request.headers.get("Host")
    parsed = _split_host(given_host) if given_host is not None else None
    if port is None or parsed is None or parsed[0] not in own or (parsed[1] or _DEFAULT_PORTS["http"]) != port:
        return error_response(
            421, "misdirected_request",
            f"this daemon answers to Host {', '.join(allowed) or '(its own address)'}, "
            f"not {repr(given_host) if given_host is not None else 'a request without one'}: "
            "a page that reaches it under another name (DNS rebinding) may neither read nor steer it",
            allowed_hosts=allowed, host=given_host,
        )  # fmt: skip
    origins = [f"{request.scheme}://{h}" for h in allowed]
    origin = request.headers.get("Origin")
    if origin is not None and not _own_origin(origin, request.scheme, own, port):
        why = ("a sandboxed frame, a file or a redirect hides its origin" if origin.strip() == "null"
               else "only this daemon's own page may call it from a browser")  # fmt: skip
        return error_response(
            403, "forbidden_origin", f"requests from Origin {origin!r} are refused ({why}): use {origins[0]}",
            origin=origin, allowed_origins=origins,
        )  # fmt: skip
    site = request.headers.get("Sec-Fetch-Site", "").strip().lower()
    if site in _FOREIGN_SITES and not is_public(request.path):
        return error_response(
            403, "forbidden_origin",
            f"the browser says another site sent this request (Sec-Fetch-Site: {site}): only this daemon's own page "
            f"({origins[0]}) may call its API",
            sec_fetch_site=site, allowed_origins=origins,
        )  # fmt: skip
    if request.method in UNSAFE_METHODS:
        given = request.headers.get("Content-Type")
        problem = _json_type_problem(given)
        if problem:
            return error_response(
                415, "unsupported_media_type",
                f"{request.method} takes Content-Type: application/json; {problem} (a page on another site can send "
                "text, form and multipart bodies without asking, so this daemon reads JSON only)",
                content_type=given,
            )  # fmt: skip
    return None


def _local_address(request: web.Request) -> tuple[str, int] | None:
    """(address, port) of the daemon's end of this connection, or None (it is gone)."""
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if not isinstance(sockname, tuple) or len(sockname) < 2:
        return None
    return _name(str(sockname[0])), int(sockname[1])


def _name(host: str) -> str:
    """A host name or address as compared: lower case, no brackets, IPv6 compressed."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def _host_of(name: str, port: int) -> str:
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` or ``[v6][:port]`` as (name, port), None when malformed."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, sep, port_text_ = value.partition(":")
        port_text = port_text_ if sep else None
    if not name or any(c in name for c in "/@?#\\ "):
        return None
    if port_text is None:
        return _name(name), None
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return _name(name), int(port_text)


def _own_origin(origin: str, scheme: str, own: frozenset[str], port: int) -> bool:
    given_scheme, sep, rest = origin.strip().partition("://")
    if not sep or given_scheme.lower() != scheme:
        return False  # "null" too
    parsed = _split_host(rest)
    return parsed is not None and parsed[0] in own and (parsed[1] or _DEFAULT_PORTS.get(scheme, 80)) == port


def _json_type_problem(given: str | None) -> str | None:
    """Why ``given`` is not ``application/json[; charset=utf-8]``, or None."""
    if given is None:
        return "none was given"
    mimetype, _, params = given.partition(";")
    if mimetype.strip().lower() != "application/json":
        return f"got {given!r}"
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return f"got charset {value.strip()!r}: JSON is UTF-8"
    return None
