"""The arXiv Atom API client: the network side of ``artifact.arxiv``."""

from __future__ import annotations

from typing import Any

import aiohttp

from ds_events.errors import NotFound, ServiceError
from ds_events.services.artifacts.arxiv import DEFAULT_API_URL, parse_atom

__all__ = ["ArxivApiFetcher"]


class ArxivApiFetcher:
    """Fetch metadata and abstract from an arXiv-compatible Atom API."""

    def __init__(self, api_url: str = DEFAULT_API_URL, *, timeout: float = 20.0) -> None:
        self.api_url = api_url
        self.timeout = timeout

    async def __call__(self, paper_id: str) -> dict[str, Any]:
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session:
                async with session.get(self.api_url, params={"id_list": paper_id}) as resp:
                    if resp.status == 404:
                        raise NotFound(f"arXiv has no paper {paper_id!r}", code="arxiv_not_found", paper_id=paper_id)
                    if resp.status >= 400:
                        raise ServiceError(f"arXiv answered HTTP {resp.status}", code="arxiv_fetch_failed", status=resp.status)
                    body = await resp.read()
        except (TimeoutError, aiohttp.ClientConnectionError, OSError) as exc:
            raise ServiceError(
                f"cannot reach arXiv at {self.api_url} ({type(exc).__name__}): offline? Nothing was cached.",
                code="arxiv_offline",
                paper_id=paper_id,
            ) from None
        return parse_atom(body, paper_id)
