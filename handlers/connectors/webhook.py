"""The webhook connector: POST each interaction as JSON, retry, record every attempt.

What to send and how an attempt is recorded are the service's
(:mod:`ds_events.services.interactions.connectors`); this adapter owns the network. Connection
errors, timeouts, 429 and 5xx are retried with exponential backoff up to the binding's
``max_attempts``; other 4xx are final. The POST carries an ``Idempotency-Key`` header:
delivery is at-least-once and receivers dedupe on it.
"""

from __future__ import annotations

import asyncio
import os

import aiohttp
import msgspec

from ds_events.events.interaction import DeliveryAttempted
from ds_events.home import Quest
from ds_events.services.interactions import connectors as connectors

__all__ = ["deliver", "deliver_pending"]


async def deliver(quest: Quest, interaction_id: str, *, session: aiohttp.ClientSession | None = None) -> list[DeliveryAttempted]:
    """Send ``interaction_id`` to its unfinished webhook targets; returns the attempt events.

    Resumes after the last recorded attempt, so calling it again after a crash continues
    the retry budget rather than restarting it.
    """
    jobs = await asyncio.to_thread(connectors.webhook_jobs, quest, interaction_id)
    if not jobs:
        return []
    own = session is None
    session = session or aiohttp.ClientSession()
    try:
        results = await asyncio.gather(*(_deliver_one(quest, session, job) for job in jobs))
    finally:
        if own:
            await session.close()
    return [event for events in results for event in events]


async def deliver_pending(quest: Quest) -> list[DeliveryAttempted]:
    """Resume every delivery without a final outcome (for the daemon after a restart)."""
    ids = await asyncio.to_thread(connectors.unfinished_interactions, quest)
    out: list[DeliveryAttempted] = []
    if not ids:
        return out
    async with aiohttp.ClientSession() as session:
        for iid in ids:
            out += await deliver(quest, iid, session=session)
    return out


async def _deliver_one(quest: Quest, session: aiohttp.ClientSession, job: connectors.WebhookJob) -> list[DeliveryAttempted]:
    recorded: list[DeliveryAttempted] = []
    timeout = aiohttp.ClientTimeout(total=job.timeout_seconds)
    attempt = job.attempts_done
    while attempt < job.max_attempts:
        attempt += 1
        if attempt > 1:
            # Exponential backoff between attempts (also after a resumed crash).
            await asyncio.sleep(job.backoff_seconds * 2 ** (attempt - 2))
        status, error, retryable = await _post(session, job.target, job, attempt, timeout)
        event = await connectors.record_attempt(quest, job, attempt, status_code=status, error=error, retryable=retryable)
        recorded.append(event)
        if event.outcome != "retrying":
            break
    return recorded


async def _post(
    session: aiohttp.ClientSession, url: str, job: connectors.WebhookJob, attempt: int, timeout: aiohttp.ClientTimeout
) -> tuple[int | None, str, bool]:
    """One POST: ``(status, error or "", retryable)``."""
    try:
        body, headers = msgspec.to_builtins(job.payload(attempt)), job.headers(attempt, os.environ)
        async with session.post(url, json=body, headers=headers, timeout=timeout) as resp:
            await resp.read()
            if 200 <= resp.status < 300:
                return resp.status, "", False
            # 429 and 5xx are the receiver's temporary trouble; other 4xx will not improve.
            retryable = resp.status == 429 or resp.status >= 500
            return resp.status, f"HTTP {resp.status} {resp.reason or ''}".strip(), retryable
    except TimeoutError:
        return None, "timed out", True
    except aiohttp.ClientError as exc:
        return None, f"{type(exc).__name__}: {exc}", True
