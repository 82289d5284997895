"""When a provider's rate or usage limit resets, read from what the agent CLI printed.

Agent CLIs say it in prose, each in its own way; :func:`reset_at` knows the forms they
print (and a few generic ones):

- Claude Code: ``Claude AI usage limit reached|1764652800`` (POSIX seconds after a bar),
  ``5-hour limit reached ∙ resets 3pm``, ``Your limit will reset at 3pm (Europe/Berlin).``
- Codex CLI: ``You've hit your usage limit. ... try again in 4 days 23 hours 59 minutes.``,
  ``Try again in 2h 13m.``, ``try again at 3:45 PM``; rate limits: ``Please try again in 20s``.
- Anything with an RFC 3339 time after "reset" / "try again" / "retry", or ``retry-after: 30``.

A clock time without a date is the next such time after ``now``, in the zone the text
names (an IANA name in parentheses), else this machine's local zone, which is the one a
CLI on this machine prints in. Nothing recognised: None (the caller backs off).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["reset_at", "LONGEST_WAIT_SECONDS"]

LONGEST_WAIT_SECONDS = 8 * 86400.0  # a reset further away than this is not believed

_EPOCH = re.compile(r"limit reached\s*\|\s*(\d{9,11})\b", re.I)
_ISO = re.compile(
    r"(?:reset|try again|retry)[^0-9]{0,40}(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)", re.I
)
_UNIT = r"(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b"
_IN = re.compile(r"(?:try again|retry|resets?|available again)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*" + _UNIT + r"[\s,and]*)+)", re.I)
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*" + _UNIT, re.I)
_RETRY_AFTER = re.compile(r"retry[- ]after\W{0,3}(\d+(?:\.\d+)?)\b(?!\s*[:.]\d)", re.I)
_CLOCK = re.compile(
    r"(?:resets?|reset at|try again at|available again at)\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?"
    r"(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+\-]+)*)\))?",
    re.I,
)
_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def reset_at(text: str, now: float) -> float | None:
    """The POSIX time at which the limit ``text`` reports resets, or None if it does
    not say (or says something past :data:`LONGEST_WAIT_SECONDS` from ``now``)."""
    for parse in (_epoch, _iso, _relative, _retry_after, _clock):
        when = parse(text, now)
        if when is not None:
            return when if now - 60 <= when <= now + LONGEST_WAIT_SECONDS else None
    return None


def _epoch(text: str, now: float) -> float | None:
    match = _EPOCH.search(text)
    return float(match.group(1)) if match else None


def _iso(text: str, now: float) -> float | None:
    match = _ISO.search(text)
    if not match:
        return None
    raw = match.group(1).replace(" ", "T").replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _relative(text: str, now: float) -> float | None:
    match = _IN.search(text)
    if not match:
        return None
    total = sum(float(n) * _SECONDS[unit[0].lower()] for n, unit in _PART.findall(match.group(1)))
    return now + total


def _retry_after(text: str, now: float) -> float | None:
    match = _RETRY_AFTER.search(text)
    return now + float(match.group(1)) if match else None


def _clock(text: str, now: float) -> float | None:
    match = _CLOCK.search(text)
    if not match:
        return None
    hour, minute, meridiem, zone = int(match.group(1)), int(match.group(2) or 0), match.group(3), match.group(4)
    if meridiem is None and match.group(2) is None:
        return None  # "resets 3" says no time of day
    if meridiem:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if meridiem.lower().startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    tz = _zone(zone)
    current = datetime.fromtimestamp(now, tz)
    when = current.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if when <= current:
        when += timedelta(days=1)
    return when.timestamp()


def _zone(name: str | None) -> tzinfo | None:
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return datetime.now().astimezone().tzinfo  # this machine's zone: what the CLI printed in
