"""arXiv papers through a local cache under ``DS_HOME/cache/arxiv/`` and a pluggable fetcher.

A fetcher is any callable ``fetcher(paper_id) -> dict | Awaitable[dict]`` returning at
least ``title`` (and usually ``authors``, ``abstract``, ``published``, ``sections`` as
``[{"title", "text"}]`` or a plain ``text``). The adapters pass one that asks the arXiv
Atom API at ``config.yaml: arxiv.api_url`` (``handlers.connectors.arxiv``); without a
network it fails with ``arxiv_offline``.
Only a validated paper is cached, so an outage or a bad answer never poisons the cache.

The quest's paper library: the first time a quest reads a paper (either mode), an
``artifact.paper_added`` event puts it in the library (the ``papers`` view);
``arxiv(mode="list")`` without a ``paper_id`` lists it (DeepScientist's form), while
``mode="list"`` with one stays the paper's overview. :class:`.commands.Arxiv` is the
tool's one parameter model (DeepScientist's ``full_text`` included); :func:`read_arxiv`
its service.

Error codes: ``invalid_paper_id``, ``invalid_mode``, ``missing_paper_id``,
``unexpected_argument``, ``arxiv_offline``, ``arxiv_not_found``, ``arxiv_bad_response``,
``arxiv_fetch_failed``.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from ds_events.config import DEFAULT_ARXIV_API_URL
from ds_events.errors import Invalid, NotFound, ServiceError
from ds_events.events.artifact import PaperAdded
from ds_events.home import Home, Quest
from ds_events.paths import write_atomic
from projections import papers as papers_view

from .commands import Arxiv, ReadArxiv
from .results import ArxivResult, PaperResult

__all__ = [
    "Fetcher",
    "DEFAULT_API_URL",
    "api_url",
    "read_arxiv",
    "read_paper",
    "normalise_paper_id",
    "parse_atom",
    "MODES",
]

Fetcher = Callable[[str], "dict[str, Any] | Awaitable[dict[str, Any]]"]
DEFAULT_API_URL = DEFAULT_ARXIV_API_URL
MODES = ("read", "list")
_NEW_ID = re.compile(r"^\d{4}\.\d{4,5}(v\d+)?$")
_OLD_ID = re.compile(r"^[a-z][a-z-]*(\.[A-Z]{2})?/\d{7}(v\d+)?$")
_PREFIXES = ("https://arxiv.org/abs/", "http://arxiv.org/abs/", "https://arxiv.org/pdf/", "arxiv:", "arXiv:")
_ATOM = "{http://www.w3.org/2005/Atom}"


async def read_arxiv(quest: Quest, cmd: Arxiv, fetcher: Fetcher) -> ArxivResult:
    """Read a paper (and put it in the quest's library the first time), or list the library.

    Every argument is checked before anything is fetched or written.
    """
    if cmd.mode not in MODES:
        raise Invalid(f"unknown mode {cmd.mode!r}: use read or list", code="invalid_mode", allowed=list(MODES))
    if cmd.paper_id is None:
        if cmd.mode == "read":
            raise Invalid("mode='read' needs a paper_id; mode='list' without one lists the quest's papers",
                          code="missing_paper_id")
        if cmd.full_text is not None:
            raise Invalid("full_text is for reading a paper: the library listing has no text",
                          code="unexpected_argument", arguments=["full_text"])
        papers = papers_view.library(quest.state("papers"))[::-1]
        return ArxivResult(ok=True, mode="list", count=len(papers), items=papers)
    if cmd.mode == "list" and cmd.full_text is not None:
        raise Invalid("full_text is for mode='read'; mode='list' answers the overview",
                      code="unexpected_argument", arguments=["full_text"])
    mode = "list" if cmd.full_text is False else cmd.mode  # an overview read is what list answers
    page = await read_paper(quest.home, ReadArxiv(paper_id=cmd.paper_id, mode=mode), fetcher)
    await asyncio.to_thread(_add_to_library, quest, page)
    return ArxivResult(ok=True, **{**msgspec.structs.asdict(page), "mode": cmd.mode})


def api_url(home: Home) -> str:
    """The arXiv API to ask: ``config.yaml: arxiv.api_url``, else the public one."""
    return home.config().arxiv.api_url


async def read_paper(home: Home, cmd: ReadArxiv, fetcher: Fetcher) -> PaperResult:
    """The paper from the cache, or fetched (then cached). ``mode="list"`` returns its
    metadata and section titles; ``mode="read"`` also the abstract and full text."""
    pid = normalise_paper_id(cmd.paper_id)
    mode = cmd.mode
    if mode not in MODES:
        raise Invalid(f"unknown mode {mode!r}: use read or list", code="invalid_mode", allowed=list(MODES))
    path = _cache_path(home, pid)
    cached = True
    try:
        paper = msgspec.json.decode(path.read_bytes(), type=_Cached)
    except (FileNotFoundError, msgspec.DecodeError):  # absent, torn or not a paper: fetch it again
        cached = False
        paper = await _fetch(home, pid, fetcher)
        write_atomic(path, msgspec.json.encode(paper))
    read = mode == "read"
    return PaperResult(
        paper_id=paper.paper_id, title=paper.title, authors=paper.authors, published=paper.published, abstract=paper.abstract,
        sections=[s.title for s in paper.sections],
        mode=mode,
        cached=cached,
        cache_path=str(path),
        text=(paper.text or "\n\n".join(f"## {s.title}\n\n{s.text}" for s in paper.sections)) if read else None,
        section_texts=msgspec.to_builtins(paper.sections) if read else None,
    )


def normalise_paper_id(value: Any) -> str:
    """``2401.01234``, ``2401.01234v2``, ``hep-th/9901001``, also with an ``arXiv:`` or
    ``https://arxiv.org/abs/`` prefix."""
    pid = value.strip() if isinstance(value, str) else ""
    for prefix in _PREFIXES:
        if pid.startswith(prefix):
            pid = pid[len(prefix) :]
    pid = pid.removesuffix(".pdf")
    if not (_NEW_ID.match(pid) or _OLD_ID.match(pid)):
        raise Invalid(
            f"invalid arXiv id {value!r}: use e.g. 2401.01234 (optionally v2) or hep-th/9901001",
            code="invalid_paper_id",
        )
    return pid


class _Section(msgspec.Struct, frozen=True):
    title: str
    text: str = ""


class _Cached(msgspec.Struct, kw_only=True, frozen=True):
    """A paper as its cache file (``DS_HOME/cache/arxiv/<id>.json``) holds it."""

    paper_id: str
    title: str
    authors: list[str]
    published: str
    abstract: str
    sections: list[_Section]
    text: str


async def _fetch(home: Home, pid: str, fetcher: Fetcher) -> _Cached:
    try:
        result = fetcher(pid)
        if inspect.isawaitable(result):
            result = await result
    except ServiceError:
        raise
    except (ConnectionError, OSError, TimeoutError) as exc:
        raise ServiceError(f"cannot fetch {pid}: {exc}; offline? Nothing was cached.", code="arxiv_offline", paper_id=pid) from None
    except Exception as exc:  # a third-party fetcher: report, never cache
        raise ServiceError(f"fetching {pid} failed: {type(exc).__name__}: {exc}", code="arxiv_fetch_failed", paper_id=pid) from None
    return _clean(result, pid)


def _clean(raw: Any, pid: str) -> _Cached:
    bad = ServiceError(f"the fetcher returned no usable paper for {pid}; nothing was cached", code="arxiv_bad_response", paper_id=pid)
    if not isinstance(raw, dict) or not isinstance(raw.get("title"), str) or not raw["title"].strip():
        raise bad
    sections = raw.get("sections") or []
    if not isinstance(sections, list) or not all(
        isinstance(s, dict) and isinstance(s.get("title"), str) and isinstance(s.get("text", ""), str) for s in sections
    ):
        raise bad
    authors = raw.get("authors") or []
    if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
        raise bad
    return _Cached(
        paper_id=pid,
        title=" ".join(raw["title"].split()),
        authors=authors,
        published=str(raw.get("published") or ""),
        abstract=str(raw.get("abstract") or "").strip(),
        sections=[_Section(title=s["title"], text=s.get("text", "")) for s in sections],
        text=str(raw.get("text") or ""),
    )


def parse_atom(body: bytes, pid: str) -> dict[str, Any]:
    """The paper in an arXiv Atom API answer (for fetchers that talk to that API)."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        raise ServiceError("arXiv answered with malformed XML; nothing was cached", code="arxiv_bad_response", paper_id=pid) from None
    entry = root.find(f"{_ATOM}entry")
    title = entry.findtext(f"{_ATOM}title") if entry is not None else None
    if entry is None or not title or entry.findtext(f"{_ATOM}id", "").endswith("/api/errors"):
        raise NotFound(f"arXiv has no paper {pid!r}", code="arxiv_not_found", paper_id=pid)
    return {
        "title": title,
        "authors": [a.findtext(f"{_ATOM}name", "").strip() for a in entry.findall(f"{_ATOM}author")],
        "published": entry.findtext(f"{_ATOM}published", ""),
        "abstract": entry.findtext(f"{_ATOM}summary", ""),
    }


def _add_to_library(quest: Quest, page: PaperResult) -> None:
    """Append ``artifact.paper_added`` unless the paper is in the library already (decided
    under the log's lock, so concurrent first reads add it once)."""
    if page.paper_id in quest.state("papers").papers:
        return
    with quest.transaction() as txn:
        if page.paper_id in quest.state("papers").papers:
            return
        txn.append([PaperAdded(paper_id=page.paper_id, title=page.title, authors=page.authors,
                               published=page.published, abstract=page.abstract)])


def _cache_path(home: Home, pid: str) -> Path:
    return home.root / "cache" / "arxiv" / f"{pid.replace('/', '_')}.json"
