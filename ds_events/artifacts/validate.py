"""Parsing and validation of what callers of the `artifact` namespace send: ids, text,
paths inside the quest, record payloads, lists and objects of plain values.

Every function here either returns a clean, typed value or raises a
:class:`~ds_events.errors.ServiceError` with a stable code, before anything is
written. Codes: ``unknown_kind``, ``missing_fields``, ``invalid_field``,
``invalid_action``, ``invalid_id``, ``payload_too_large``, ``path_outside_quest``,
``path_not_allowed``, ``path_outside_root`` (from :func:`ds_events.paths.confined`).
Metrics, directions and metric contracts are :mod:`ds_events.artifacts.metrics`'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from ds_events.errors import Invalid
from ds_events.paths import confined

__all__ = [
    "RECORD_KINDS",
    "DECISION_ACTIONS",
    "APPROVAL_VERDICTS",
    "ID_RE",
    "MAX_PAYLOAD_BYTES",
    "check_id",
    "optional_id",
    "check_text",
    "comment_text",
    "confine_path",
    "check_materialised",
    "check_record",
    "check_text_list",
    "check_evaluation_summary",
    "check_scalars",
    "check_objects",
    "report_fields",
    "is_present",
]

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_PAYLOAD_BYTES = 256 * 1024
DECISION_ACTIONS = (
    "continue",
    "launch_experiment",
    "launch_analysis_campaign",
    "prepare_branch",
    "attach_baseline",
    "confirm_baseline",
    "reuse_baseline",
    "revise_idea",
    "write",
    "finalize",
    "request_user_decision",
    "stop",
    # the rest of DeepScientist's decision skill's actions
    "branch",
    "activate_branch",
    "publish_baseline",
    "review",
    "iterate",
    "reset",
)
APPROVAL_VERDICTS = ("approved", "rejected", "changes_requested")
# kind -> fields that must be present and non-empty
_REQUIRED: dict[str, tuple[str, ...]] = {
    "baseline": ("title",),
    "idea": ("title",),
    "decision": ("verdict", "action", "reason"),
    "progress": ("message",),
    "answer": ("message",),
    "milestone": ("title",),
    "run": ("run_kind",),
    "report": (),  # a report without a title gets one (_derived_title), as DeepScientist takes them
    "approval": ("verdict",),
    "graph": ("title",),
}
RECORD_KINDS = tuple(_REQUIRED)
# fields that, when present, must be strings (everything else is free-form JSON)
_STRING_FIELDS = ("title", "summary", "message", "verdict", "action", "reason", "run_kind", "status", "idea_id", "run_id")


def check_id(value: Any, field: str) -> str:
    """A caller-chosen id: 1-64 letters, digits, ``.``, ``_`` or ``-``, no ``..``."""
    if not isinstance(value, str) or not ID_RE.match(value) or ".." in value or value.endswith((".", ".lock")):
        raise Invalid(
            f"{field} {value!r} is not a valid id: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
            code="invalid_id",
            field=field,
        )
    return value


def optional_id(value: Any, field: str) -> str | None:
    return None if value is None else check_id(value, field)


def check_text(value: Any, field: str, *, required: bool = True, max_chars: int = 20_000) -> str:
    if value is None:
        if required:
            raise Invalid(f"{field} is required", code="missing_fields", missing=[field])
        return ""
    if not isinstance(value, str):
        raise Invalid(f"{field} must be a string", code="invalid_field", field=field, expected="string")
    if required and not value.strip():
        raise Invalid(f"{field} is required and must not be empty", code="missing_fields", missing=[field])
    if len(value) > max_chars:
        raise Invalid(f"{field} is longer than {max_chars} characters", code="invalid_field", field=field)
    return value


def confine_path(root: Path, value: Any, field: str) -> str:
    """``value`` as a clean path relative to ``root``, refusing anything that leaves it.

    Relative paths are taken from ``root``; absolute ones must resolve inside it.
    ``..`` components, symlinks that point outside, and the ``.git``/``.ds`` areas are
    refused.
    """
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise Invalid(f"{field} must be a non-empty path", code="invalid_field", field=field, expected="path")
    base = root.resolve()
    raw = Path(value)
    if ".." in raw.parts:
        raise Invalid(f"{field} {value!r} uses '..': give a path inside the quest", code="path_outside_quest", field=field)
    target = (raw if raw.is_absolute() else base / raw).resolve()
    if target != base and base not in target.parents:
        raise Invalid(f"{field} {value!r} is outside the quest repository", code="path_outside_quest", field=field)
    rel = PurePosixPath(*target.relative_to(base).parts)
    if rel.parts and rel.parts[0] in (".git", ".ds"):
        raise Invalid(f"{field} {value!r} is inside {rel.parts[0]}/, which the runtime owns", code="path_not_allowed", field=field)
    return str(rel) if rel.parts else "."


def check_materialised(root: Path, rels: Iterable[str], *, field: str = "path") -> None:
    """Refuse (``path_outside_root``) before an event is appended if a file it will
    materialise would land outside ``root``: a symbolic link on the way (planted by an
    agent's shell, or copied in with the quest) must make the call fail, not the write
    that follows the append (a refused call that wrote, and a replay that fails)."""
    for rel in rels:
        confined(root, rel, field=field)


def check_record(payload: dict[str, Any], root: Path) -> tuple[str, str | None, dict[str, Any]]:
    """Validate a ``record`` payload (an object: the command's type guarantees it):
    returns ``(kind, artifact_id or None, payload)``."""
    if len(msgspec.json.encode(payload)) > MAX_PAYLOAD_BYTES:
        raise Invalid(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes: store big data in files", code="payload_too_large")
    kind = payload.get("kind")
    if not isinstance(kind, str) or kind not in _REQUIRED:
        raise Invalid(f"unknown kind {kind!r}: use one of {', '.join(RECORD_KINDS)}", code="unknown_kind", allowed=list(RECORD_KINDS))
    missing = [f for f in _REQUIRED[kind] if not is_present(payload.get(f))]
    if missing:
        raise Invalid(f"a {kind} record needs {', '.join(missing)}", code="missing_fields", kind=kind, missing=missing)
    for field in _STRING_FIELDS:
        if field in payload and payload[field] is not None and not isinstance(payload[field], str):
            raise Invalid(f"{field} must be a string", code="invalid_field", field=field, expected="string")
    if kind == "decision" and payload["action"] not in DECISION_ACTIONS:
        raise Invalid(
            f"unknown decision action {payload['action']!r}", code="invalid_action", allowed=list(DECISION_ACTIONS)
        )
    if kind == "approval" and payload["verdict"] not in APPROVAL_VERDICTS:
        raise Invalid(
            f"unknown approval verdict {payload['verdict']!r}", code="invalid_field", field="verdict", allowed=list(APPROVAL_VERDICTS)
        )
    clean = {k: v for k, v in payload.items() if k not in ("kind", "artifact_id")}
    if kind == "report" and not is_present(clean.get("title")):
        clean["title"] = _derived_title(clean)
    if "paths" in clean:
        if not isinstance(clean["paths"], list):
            raise Invalid("paths must be a list of paths inside the quest", code="invalid_field", field="paths")
        clean["paths"] = [confine_path(root, p, "paths") for p in clean["paths"]]
    for field in ("idea_id", "run_id"):
        if clean.get(field) is not None:
            check_id(clean[field], field)
    return kind, optional_id(payload.get("artifact_id"), "artifact_id"), clean



def _derived_title(report: dict[str, Any]) -> str:
    """A title for a report sent without one: the first line of its summary (or
    message), else its report_type in words, else "Report". It is stored in the
    event, so the report's file and every view show the same title after replay."""
    for field in ("summary", "message"):
        text = report.get(field)
        if isinstance(text, str):
            line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
            if line:
                return line if len(line) <= _DERIVED_TITLE_CHARS else line[: _DERIVED_TITLE_CHARS - 1].rstrip() + "…"
    report_type = report.get("report_type")
    if isinstance(report_type, str) and report_type.strip():
        return report_type.strip().replace("_", " ").capitalize()[:_DERIVED_TITLE_CHARS]
    return "Report"


_DERIVED_TITLE_CHARS = 120


def check_text_list(value: Any, field: str, *, max_items: int = 200, max_chars: int = 2000) -> list[str]:
    """A list of non-empty strings (paths, notes); ``None`` is the empty list."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > max_items:
        raise Invalid(f"{field} must be a list of up to {max_items} strings", code="invalid_field", field=field)
    out = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > max_chars or "\x00" in item:
            raise Invalid(
                f"each {field} entry must be a non-empty string of at most {max_chars} characters", code="invalid_field", field=field
            )
        out.append(item.strip())
    return out


def check_evaluation_summary(value: Any, field: str = "evaluation_summary") -> dict[str, Any] | None:
    """DeepScientist's evaluation summary (takeaway, claim_update, baseline_relation,
    comparability, failure_mode, next_action, or any other key): an object of scalars."""
    if value is None:
        return None
    return check_scalars(value, field) or None


def check_scalars(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Invalid(f"{field} must be an object", code="invalid_field", field=field, expected="object")
    for key, item in value.items():
        if item is not None and not isinstance(item, (str, int, float, bool)):
            raise Invalid(f"{field}.{key} must be a string, number or boolean", code="invalid_field", field=field)
        if isinstance(item, str) and len(item) > 20_000:
            raise Invalid(f"{field}.{key} is longer than 20000 characters", code="invalid_field", field=field)
    return {k: v for k, v in value.items() if v is not None}


def comment_text(comment: Any) -> str:
    """A caller's ``comment`` (text, or DeepScientist's object) as the text an event keeps."""
    if comment is None:
        return ""
    if isinstance(comment, dict):
        return msgspec.json.encode(comment).decode()[:5000]
    return check_text(comment, "comment", required=False, max_chars=5000)


def check_objects(items: list[Any] | None, field: str) -> list[dict[str, Any]]:
    """Objects kept as given (their JSON type is checked; the log's event size limit
    bounds them)."""
    if any(not isinstance(i, dict) for i in items or []):
        raise Invalid(f"each {field} entry must be an object", code="invalid_field", field=field)
    return list(items or [])


def report_fields(**fields: Any) -> dict[str, Any]:
    """The facts worth keeping in an event's ``report``: empty strings, lists and None
    are left out; a ``comment`` is kept as :func:`comment_text` makes it (an object as is)."""
    out = {}
    for key, value in fields.items():
        if key == "comment":
            value = comment_text(value) if not isinstance(value, dict) else value
        if value in (None, "", [], {}):
            continue
        out[key] = value
    return out


def is_present(value: Any) -> bool:
    """Whether a required field holds something: not None, not blank, not empty."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, dict)):
        return bool(value)
    return True
