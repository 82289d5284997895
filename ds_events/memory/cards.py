"""Card values: checking what a caller gives for a card, parsing a card file, new card
ids. Pure helpers below the memory services (which say what an answer about a card
carries: ``ds_events.services.memory.cards.info``)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import frontmatter
import msgspec

from ds_events.errors import Invalid
from projections.memory import KINDS, RESERVED_KEYS, SINGULAR, MemoryState

__all__ = [
    "card_file_text",
    "parse_card_text",
    "new_card_id",
    "check_kind",
    "check_title",
    "check_body",
    "check_tags",
    "check_metadata",
    "as_tag_list",
    "MAX_TITLE",
    "MAX_BODY",
    "MAX_TAGS",
]

MAX_TITLE = 300
MAX_BODY = 200_000
MAX_TAGS = 32


def card_file_text(data: bytes, rel: str) -> str:
    """The text of a card file read from disk; bytes that are not UTF-8 are refused."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid(
            f"{rel} is not UTF-8 text (byte {exc.start}): fix or remove the file", code="invalid_card_file", path=rel
        ) from None


def parse_card_text(text: str) -> tuple[dict[str, Any], str]:
    """Frontmatter (only with a line-anchored ``---`` fence) and body of a card file."""
    if not isinstance(text, str):
        raise Invalid("markdown must be a string", code="invalid_markdown")
    try:
        post = frontmatter.loads(text)
    except Exception as exc:  # yaml errors come in several types
        raise Invalid(f"the card's frontmatter is not valid YAML: {exc}", code="invalid_markdown") from None
    front = dict(post.metadata)
    if not isinstance(front, dict):
        raise Invalid("the card's frontmatter must be a mapping", code="invalid_markdown")
    return _jsonable(front, "frontmatter"), post.content


def new_card_id(kind: str, state: MemoryState) -> str:
    while True:
        card_id = f"{SINGULAR[kind]}-{secrets.token_hex(4)}"
        if card_id not in state.cards:
            return card_id


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise Invalid(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}", code="invalid_kind")
    return kind


def check_title(title: str) -> str:
    if not isinstance(title, str) or not title.strip():
        raise Invalid("a card needs a non-empty title", code="missing_title")
    title = title.strip()
    if "\n" in title or len(title) > MAX_TITLE:
        raise Invalid(f"a title is one line of at most {MAX_TITLE} characters", code="invalid_title")
    return title


def check_body(body: str) -> str:
    if not isinstance(body, str):
        raise Invalid("body must be a string", code="invalid_body")
    if len(body) > MAX_BODY:
        raise Invalid(f"a body is at most {MAX_BODY} characters: split the card", code="body_too_long")
    return body


def check_tags(tags: Sequence[str] | None) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise Invalid("tags must be a list of strings", code="invalid_tags")
    clean = list(dict.fromkeys(t.strip() for t in tags if t.strip()))
    if len(clean) > MAX_TAGS or any(len(t) > 64 or "\n" in t for t in clean):
        raise Invalid(f"at most {MAX_TAGS} tags of at most 64 characters each", code="invalid_tags")
    return clean


def check_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise Invalid("metadata must be an object with string keys", code="invalid_metadata")
    clash = sorted(set(metadata) & RESERVED_KEYS)
    if clash:
        raise Invalid(f"metadata may not set the card's own fields {clash}", code="invalid_metadata", keys=clash)
    return _jsonable(metadata, "metadata")


def as_tag_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    raise Invalid("frontmatter tags must be a list", code="invalid_tags")


def _jsonable(value: dict[str, Any], what: str) -> dict[str, Any]:
    # YAML gives dates and the like; the log stores JSON, so normalise once here.
    try:
        data = msgspec.json.encode(value)
    except (TypeError, msgspec.EncodeError) as exc:
        raise Invalid(f"{what} must be JSON-compatible: {exc}", code="invalid_metadata") from None
    if len(data) > 50_000:
        raise Invalid(f"{what} is at most 50 kB of JSON", code="invalid_metadata")
    return msgspec.json.decode(data, type=dict[str, Any])
