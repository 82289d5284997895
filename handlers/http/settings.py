"""The daemon's knobs, typed: what :func:`~handlers.http.app.make_app` takes, kept in the
app under :data:`~handlers.http.keys.SETTINGS` for the parts that read them (the hub at
startup, the streams on each request)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "Settings",
    "StreamSettings",
    "DEFAULT_MAX_BODY",
    "DEFAULT_WORKERS",
    "DEFAULT_QUEUE_SIZE",
    "DEFAULT_POLL_INTERVAL",
    "DEFAULT_KEEPALIVE",
    "DEFAULT_RETRY_MS",
]

DEFAULT_MAX_BODY = 1 << 20  # 1 MiB: a message is at most 100,000 characters
DEFAULT_WORKERS = 8  # threads for blocking calls; streams never wait for them
DEFAULT_QUEUE_SIZE = 1000
DEFAULT_POLL_INTERVAL = 0.05
DEFAULT_KEEPALIVE = 15.0
DEFAULT_RETRY_MS = 2000


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamSettings:
    """How live event streams behave (``stream.py``, and the hub's followers)."""

    keepalive: float = DEFAULT_KEEPALIVE  # seconds between comment lines on an idle stream
    retry_ms: int = DEFAULT_RETRY_MS  # SSE ``retry:``, how long a client waits to reconnect
    queue_size: int = DEFAULT_QUEUE_SIZE  # live events a stream may have unsent before it is dropped
    poll_interval: float = DEFAULT_POLL_INTERVAL  # seconds between a follower's looks for other processes' appends

    def __post_init__(self) -> None:
        _require(self.keepalive > 0, "keepalive must be > 0 seconds")
        _require(self.retry_ms >= 0, "retry_ms must be >= 0")
        _require(self.queue_size >= 1, "queue_size must be >= 1")
        _require(self.poll_interval > 0, "poll_interval must be > 0 seconds")


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    """Everything an app is built with besides its home."""

    token: str | None = None  # every /api route then requires ``Authorization: Bearer <token>``
    host: str | None = None  # the address the daemon listens on: one more of its own names (guard.py)
    max_body: int = DEFAULT_MAX_BODY  # bytes; a larger body is 413 body_too_large
    workers: int = DEFAULT_WORKERS  # the hub's threads for blocking calls
    stream: StreamSettings = field(default_factory=StreamSettings)

    def __post_init__(self) -> None:
        _require(self.max_body >= 1, "max_body must be >= 1 byte")
        _require(self.workers >= 1, "workers must be >= 1")


def _require(ok: bool, message: str) -> None:
    if not ok:  # a programming error of the caller's, not a client's bad input
        raise ValueError(message)
