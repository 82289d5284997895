"""The request's own text — path, query, the headers routes read — is well-formed UTF-8.

Bodies are checked where every edge decodes its arguments
(:func:`ds_events.services.commands.decode_command`); this middleware covers what
aiohttp hands the routes besides: it decodes a query's percent-escapes with
``errors="replace"`` (``?q=%ED%A0%80``, the CESU-8 bytes of a lone surrogate, arrives as
three U+FFFD), leaves undecodable escapes in a path as they were sent (``%ED%A0%80``
stays literal in ``match_info``), and reads header bytes with ``surrogateescape`` (a
byte ``0xff`` in ``Last-Event-ID`` becomes ``"\\udcff"``). A route would so see
something other than what the client sent, or a str that cannot be encoded again. So
each is checked on the raw request target and the raw header values, and refused as
400 ``invalid_text`` naming the parameter (``path``, the query parameter's name, or
the header's name).
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from aiohttp import web
from aiohttp.typedefs import Handler

from ds_events.errors import Invalid
from ds_events.services.commands import printable

__all__ = ["text_middleware", "TEXT_HEADERS"]

# The headers some route or middleware of ours reads.
TEXT_HEADERS = ("Host", "Origin", "Sec-Fetch-Site", "Content-Type", "Authorization", "Accept", "Last-Event-ID")
_SURROGATE = re.compile("[\ud800-\udfff]")


@web.middleware
async def text_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    path, _, query = request.raw_path.partition("?")
    if _decoded(path, plus=False) is None:
        raise _invalid("the path", "path")
    for pair in query.split("&") if query else ():
        raw_name, _, raw_value = pair.partition("=")
        name = _decoded(raw_name, plus=True)
        if name is None:
            raise _invalid(f"the query parameter name {printable(raw_name)!r}", printable(raw_name))
        if _decoded(raw_value, plus=True) is None:
            raise _invalid(f"the query parameter {name!r}", name)
    for header in TEXT_HEADERS:
        for value in request.headers.getall(header, ()):
            found = _SURROGATE.search(value)
            if found:
                raise Invalid(
                    f"header {header} is not UTF-8 text ({_byte(value[found.start()])} at character {found.start()})",
                    code="invalid_text", argument=header,
                )  # fmt: skip
    return await handler(request)


def _decoded(raw: str, *, plus: bool) -> str | None:
    """``raw`` (as sent: percent-escaped; aiohttp keeps raw bytes as surrogateescape) as
    UTF-8 text once its escapes are decoded, or None."""
    try:
        data = unquote_to_bytes((raw.replace("+", " ") if plus else raw).encode("utf-8", "surrogateescape"))
        return data.decode("utf-8")
    except UnicodeError:
        return None


def _invalid(what: str, argument: str) -> Invalid:
    return Invalid(
        f"{what} is not UTF-8 text once its percent-escapes are decoded: escape the UTF-8 bytes of the text",
        code="invalid_text", argument=argument,
    )  # fmt: skip


def _byte(char: str) -> str:
    code = ord(char)
    return f"byte {code - 0xDC00:#04x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
