"""The text form of a quest's events, shared by ``ds events tail --format text`` and
``ds run``: one formatter, so the live view of a turn and the log read later look alike.

Each event is one line: ``seq ts type actor field=value ...`` (values cut at 60
characters). :class:`EventPrinter` writes those lines, or the stored JSON lines, to a
stream; on a terminal a run of ``bash.progress`` events is one line rewritten in place
(``\\r`` and erase-to-end-of-line), cut to the terminal's width so the rewrite never
wraps; anything else first ends that line, so the last progress update stays visible.
When the stream is not a terminal (a pipe, a file, a test) every progress update is a
line of its own: what a script or ``grep`` expects, and exactly what the log holds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TextIO

import msgspec

from ds_events.events import Event, decode_line

__all__ = ["text_line", "EventPrinter", "PROGRESS_TYPE"]

PROGRESS_TYPE = "bash.progress"
_ENVELOPE = frozenset({"seq", "id", "ts", "v", "quest_id", "actor", "run_id", "prev", "more", "type"})
_CLEAR = "\r\x1b[K"  # back to column 0, erase to the end of the line


def text_line(event: Event) -> str:
    """The event as one readable line (no newline)."""
    payload = {k: v for k, v in msgspec.structs.asdict(event).items() if k not in _ENVELOPE}
    body = " ".join(f"{k}={_short(v)}" for k, v in payload.items())
    return f"{event.seq:>7} {event.ts} {event.type:<24} {event.actor:<12} {body}"


class EventPrinter:
    """Writes stored event lines to ``stream``: as text (:func:`text_line`), as the stored
    JSON (``raw``), or through ``convert`` (a line -> line mapping, e.g. ACP)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        raw: bool = False,
        convert: Callable[[bytes], bytes] | None = None,
        tty: bool | None = None,
    ) -> None:
        self.stream = stream
        self.raw = raw or convert is not None
        self.convert = convert
        self.tty = _isatty(stream) if tty is None else tty
        self._pending = False  # a progress line is on screen without its newline

    def line(self, line: bytes) -> None:
        """Print one stored line (``\\n`` not included)."""
        if self.raw:
            if self.convert is not None:
                line = self.convert(line)
            self._write(line.decode("utf-8") + "\n")
            return
        event = decode_line(line)
        text = text_line(event)
        if self.tty and event.type == PROGRESS_TYPE:
            width = shutil.get_terminal_size((120, 24)).columns
            self._write(_CLEAR + text[: max(width - 1, 20)])
            self._pending = True
            return
        self._write(("\n" if self._pending else "") + text + "\n")
        self._pending = False

    def text(self, text: str) -> None:
        """A line that is not an event (a summary), after any progress line."""
        self._write(("\n" if self._pending else "") + text + "\n")
        self._pending = False

    def close(self) -> None:
        """End a progress line left open (the cursor goes to a fresh line)."""
        if self._pending:
            self._write("\n")
            self._pending = False

    def _write(self, text: str) -> None:
        # UTF-8 bytes whatever the locale says (the log is UTF-8; a C locale's ASCII
        # stdout would refuse a title in another script).
        buffer = getattr(self.stream, "buffer", None)
        if buffer is None:
            self.stream.write(text)
            self.stream.flush()
            return
        self.stream.flush()
        buffer.write(text.encode("utf-8"))
        buffer.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False


def _short(value: object, width: int = 60) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n")
    return repr(text[:width] + "…") if len(text) > width else repr(text)
