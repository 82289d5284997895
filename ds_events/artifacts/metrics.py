"""Metrics of the `artifact` namespace: flat metric summaries, directions, the canonical
metric contract a baseline is confirmed with, and a run's comparison against it.

Every function here either returns a clean, typed value or raises a
:class:`~ds_events.errors.ServiceError` with a stable code, before anything is
written. Codes: ``invalid_metrics_summary``, ``invalid_metric_direction``,
``invalid_metric_contract``, ``unknown_primary_metric``, ``invalid_metric_rows``,
``duplicate_metric_rows``, ``metric_value_mismatch``, ``invalid_primary_metric``,
``invalid_field`` (an evaluation protocol that is neither an object nor a sentence).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ds_events.errors import Invalid

from .validate import is_present

__all__ = [
    "check_metrics",
    "normalise_directions",
    "merge_directions",
    "normalise_contract",
    "compare_to_contract",
    "normalise_protocol",
    "metric_rows",
    "merge_metrics",
    "primary_metric_ref",
    "contract_input",
]

_METRIC_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,127}$")
_DIRECTIONS = {
    "higher": "higher",
    "higher_is_better": "higher",
    "max": "higher",
    "maximize": "higher",
    "lower": "lower",
    "lower_is_better": "lower",
    "min": "lower",
    "minimize": "lower",
    # DeepScientist's spellings
    "higher_better": "higher",
    "more_is_better": "higher",
    "greater_is_better": "higher",
    "maximise": "higher",
    "lower_better": "lower",
    "less_is_better": "lower",
    "smaller_is_better": "lower",
    "minimise": "lower",
}


def check_metrics(value: Any, field: str = "metrics_summary", *, allow_empty: bool = False) -> dict[str, float]:
    """A flat ``{metric_id: number}`` mapping (nested values, strings, NaN are refused)."""
    if value is None and allow_empty:
        return {}
    if not isinstance(value, dict) or (not value and not allow_empty):
        raise Invalid(f"{field} must be a non-empty flat object of metric id -> number", code="invalid_metrics_summary", field=field)
    problems = []
    out: dict[str, float] = {}
    for key, number in value.items():
        if not isinstance(key, str) or not _METRIC_ID_RE.match(key):
            problems.append({"metric_id": key, "problem": "invalid metric id"})
        elif isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
            problems.append({"metric_id": key, "problem": f"value must be a finite number, got {type(number).__name__}"})
        else:
            out[key] = float(number)
    if problems:
        raise Invalid(f"{field} must be flat: metric id -> number", code="invalid_metrics_summary", field=field, problems=problems)
    return out


def normalise_directions(value: Any, field: str = "metric_directions") -> dict[str, str]:
    """``{metric_id: "higher"|"lower"}`` (also accepts maximize/minimize, *_is_better)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(f"{field} must be an object of metric id -> 'higher' | 'lower'", code="invalid_metric_direction")
    out = {}
    for key, direction in value.items():
        norm = _direction(direction)
        if norm is None:
            raise Invalid(
                f"{field}[{key!r}] is {direction!r}: use 'higher' or 'lower'",
                code="invalid_metric_direction",
                metric_id=key,
                allowed=sorted(_DIRECTIONS),
            )
        out[str(key)] = norm
    return out


def normalise_contract(
    contract: Any,
    metrics_summary: dict[str, float],
    primary_metric: Any,
    directions: dict[str, str],
    *,
    baseline_id: str,
    variant_id: str | None,
    overrides: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The canonical metric contract: every metric with its description, derivation or
    origin path, source ref, direction and baseline value.

    ``overrides`` (the caller's explicit ``metric_directions``) replace the entries'
    directions, as DeepScientist applies them; ``directions`` (implied elsewhere, such as
    by a primary metric's own direction) must agree with the entries, or the contract is
    refused with a message that says they disagree."""
    if not isinstance(contract, dict):
        raise Invalid("metric_contract must be an object with 'metrics'", code="invalid_metric_contract")
    entries = _contract_entries(contract.get("metrics"))
    overrides = overrides or {}
    directions = {**directions, **overrides}
    problems: list[dict[str, Any]] = []
    for metric_id, entry in entries.items():
        if not isinstance(entry, dict):
            problems.append({"metric_id": metric_id, "problem": "entry must be an object"})
            continue
        missing = [f for f in ("description", "source_ref") if not is_present(entry.get(f))]
        if not is_present(entry.get("derivation")) and not is_present(entry.get("origin_path")):
            missing.append("derivation|origin_path")
        if missing:
            problems.append({"metric_id": metric_id, "missing": missing})
        if "direction" in entry and _direction(entry["direction"]) is None:
            problems.append({"metric_id": metric_id, "problem": f"direction {entry['direction']!r}: use higher or lower"})
        elif (metric_id in directions and metric_id not in overrides and "direction" in entry
              and _direction(entry["direction"]) != directions[metric_id]):  # fmt: skip
            problems.append({"metric_id": metric_id, "problem": "the primary metric's direction and the contract entry disagree"})
    for metric_id in metrics_summary:
        if metric_id not in entries:
            problems.append({"metric_id": metric_id, "missing": ["contract entry"]})
    for metric_id in entries:
        if metric_id not in metrics_summary:
            problems.append({"metric_id": metric_id, "missing": ["value in metrics_summary"]})
    for metric_id in directions:
        if metric_id not in entries:
            problems.append({"metric_id": metric_id, "problem": "metric_directions names a metric the contract lacks"})
    if problems:
        raise Invalid(_contract_message(problems), code="invalid_metric_contract", problems=problems)
    if not isinstance(primary_metric, str) or primary_metric not in metrics_summary:
        raise Invalid(
            f"primary_metric {primary_metric!r} is not in metrics_summary",
            code="unknown_primary_metric",
            metric_ids=sorted(metrics_summary),
        )
    protocol = contract.get("evaluation_protocol")
    if protocol is not None and not isinstance(protocol, (dict, str)):
        raise Invalid("evaluation_protocol must be an object or a string", code="invalid_metric_contract")
    metrics = {}
    for metric_id, entry in sorted(entries.items()):
        clean = {k: v for k, v in entry.items() if k not in ("metric_id", "id")}
        clean["direction"] = directions.get(metric_id) or _direction(entry.get("direction", "higher")) or "higher"
        stated = _direction(entry.get("direction", clean["direction"]))
        if metric_id in overrides and stated != clean["direction"]:
            clean["contract_direction"] = stated  # what the entry said before metric_directions overrode it
        clean["value"] = metrics_summary[metric_id]
        metrics[metric_id] = clean
    extra = {k: v for k, v in contract.items() if k not in ("metrics", "evaluation_protocol")}
    return {
        **extra,
        "baseline_id": baseline_id,
        "variant_id": variant_id,
        "primary_metric": primary_metric,
        "metric_ids": sorted(metrics),
        "metrics": metrics,
        "evaluation_protocol": normalise_protocol(protocol),
    }


def _contract_message(problems: list[dict[str, Any]]) -> str:
    """What is wrong with a contract, by the kinds of problem found (``problems`` lists each)."""
    parts = []
    if any("missing" in p for p in problems):
        parts.append(
            "it is incomplete: every metric needs a description, a derivation or origin_path, a source_ref "
            "and a value in metrics_summary"
        )
    disagree = sorted({p["metric_id"] for p in problems if "disagree" in str(p.get("problem", ""))})
    if disagree:
        parts.append(
            f"directions disagree for {', '.join(disagree)}: the primary metric's direction differs from the "
            "contract entry's (give metric_directions to set the direction explicitly)"
        )
    unknown = sorted({p["metric_id"] for p in problems if "lacks" in str(p.get("problem", ""))})
    if unknown:
        parts.append(f"metric_directions names metrics the contract lacks: {', '.join(unknown)}")
    other = [p for p in problems if "missing" not in p and p["metric_id"] not in disagree and p["metric_id"] not in unknown]
    if other:
        parts.append("; ".join(f"{p['metric_id']}: {p.get('problem')}" for p in other))
    return "the metric contract is refused: " + "; ".join(parts)


def compare_to_contract(
    contract: dict[str, Any],
    metrics_summary: dict[str, float],
    directions: dict[str, str],
    protocol: Any,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Check a main experiment against a confirmed contract.

    Returns ``(problems, comparisons)``; ``problems`` is empty when the run satisfies the
    contract, else it holds ``missing_metric_ids``, ``direction_mismatches`` and/or
    ``evaluation_protocol_mismatch`` plus the baseline's metric ids and details.
    """
    metrics: dict[str, dict[str, Any]] = contract["metrics"]
    problems: dict[str, Any] = {}
    missing = sorted(m for m in metrics if m not in metrics_summary)
    if missing:
        problems["missing_metric_ids"] = missing
    mismatches = [
        {"metric_id": m, "baseline": metrics[m]["direction"], "given": d}
        for m, d in sorted(directions.items())
        if m in metrics and metrics[m]["direction"] != d
    ]
    if mismatches:
        problems["direction_mismatches"] = mismatches
    given = normalise_protocol(protocol)
    expected = contract.get("evaluation_protocol")
    if given is not None and expected is not None and given != expected:
        keys = sorted(k for k in set(given) | set(expected) if given.get(k) != expected.get(k))
        problems["evaluation_protocol_mismatch"] = {"baseline": expected, "given": given, "differing_keys": keys}
    if problems:
        problems["baseline_metric_ids"] = sorted(metrics)
        problems["baseline_metric_details"] = {
            m: {k: e.get(k) for k in ("description", "direction", "value", "source_ref")} for m, e in metrics.items()
        }
        return problems, {}
    comparisons = {}
    for metric_id, entry in metrics.items():
        value, base = metrics_summary[metric_id], entry["value"]
        delta = value - base
        comparisons[metric_id] = {
            "baseline": base,
            "value": value,
            "delta": delta,
            "direction": entry["direction"],
            "better": delta > 0 if entry["direction"] == "higher" else delta < 0,
        }
    return {}, comparisons


def _contract_entries(metrics: Any) -> dict[str, Any]:
    if isinstance(metrics, dict) and metrics:
        return dict(metrics)
    if isinstance(metrics, list) and metrics:
        out = {}
        for entry in metrics:
            metric_id = entry.get("metric_id") or entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(metric_id, str):
                raise Invalid("each metric_contract.metrics entry needs a 'metric_id'", code="invalid_metric_contract")
            out[metric_id] = entry
        return out
    raise Invalid(
        "metric_contract.metrics must be a non-empty object (metric id -> entry) or list of entries",
        code="invalid_metric_contract",
    )


def normalise_protocol(value: Any) -> dict[str, Any] | None:
    # A plain string protocol is compared as {"description": ...}.
    if value is None:
        return None
    if isinstance(value, str):
        return {"description": value.strip()}
    if isinstance(value, dict):
        return dict(value)
    raise Invalid("evaluation_protocol must be an object or a string", code="invalid_field", field="evaluation_protocol")


def _direction(value: Any) -> str | None:
    return _DIRECTIONS.get(value) if isinstance(value, str) else None


def metric_rows(value: Any, field: str = "metric_rows") -> tuple[list[dict[str, Any]], dict[str, float], dict[str, str]]:
    """DeepScientist's ``[{metric_id, value, ...}]`` rows: returns the rows (each with
    ``metric_id`` and a numeric ``value``, other keys kept), their ``{metric_id: value}``
    and the directions rows name. ``name`` or ``metric`` stand for ``metric_id``. A
    metric in two rows (two splits, two seeds) is refused unless the caller says which
    value counts through ``metrics_summary``: see :func:`merge_metrics`."""
    if value is None:
        return [], {}, {}
    if not isinstance(value, list) or len(value) > 500:
        raise Invalid(f"{field} must be a list of up to 500 objects {{metric_id, value, ...}}", code="invalid_metric_rows", field=field)
    rows: list[dict[str, Any]] = []
    values: dict[str, list[float]] = {}
    directions: dict[str, str] = {}
    problems: list[dict[str, Any]] = []
    for i, row in enumerate(value):
        if not isinstance(row, dict):
            problems.append({"row": i, "problem": "not an object"})
            continue
        metric_id = row.get("metric_id") or row.get("name") or row.get("metric")
        number = row.get("value")
        if not isinstance(metric_id, str) or not _METRIC_ID_RE.match(metric_id):
            problems.append({"row": i, "problem": "metric_id missing or not a metric id"})
            continue
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
            problems.append({"row": i, "metric_id": metric_id, "problem": "value must be a finite number"})
            continue
        if "direction" in row:
            norm = _direction(row["direction"])
            if norm is None:
                problems.append({"row": i, "metric_id": metric_id, "problem": f"direction {row['direction']!r}: use higher or lower"})
                continue
            if directions.setdefault(metric_id, norm) != norm:
                problems.append({"row": i, "metric_id": metric_id, "problem": "rows give this metric two directions"})
                continue
        clean = {k: v for k, v in row.items() if k not in ("name", "metric")}
        clean.update(metric_id=metric_id, value=float(number))
        rows.append(clean)
        values.setdefault(metric_id, []).append(float(number))
    if problems:
        raise Invalid(
            f"{field}: each row needs a metric_id and a finite numeric value",
            code="invalid_metric_rows", field=field, problems=problems,
        )  # fmt: skip
    summary = {m: v[0] for m, v in values.items() if len(v) == 1}
    repeated = sorted(m for m, v in values.items() if len(v) > 1)
    if repeated:
        summary.update({m: math.nan for m in repeated})  # merge_metrics asks for the value that counts
    return rows, summary, directions


def merge_metrics(summary: dict[str, float], from_rows: dict[str, float]) -> dict[str, float]:
    """``metrics_summary`` and the values of ``metric_rows`` as one ``{metric_id: value}``:
    a metric given in both must agree; one repeated across rows needs its value in
    ``metrics_summary``."""
    out = dict(summary)
    mismatched = []
    repeated = []
    for metric_id, value in from_rows.items():
        if metric_id in out:
            if not math.isnan(value) and not math.isclose(out[metric_id], value, rel_tol=0, abs_tol=1e-12):
                mismatched.append({"metric_id": metric_id, "metrics_summary": out[metric_id], "metric_rows": value})
        elif math.isnan(value):
            repeated.append(metric_id)
        else:
            out[metric_id] = value
    if mismatched:
        raise Invalid(
            "metrics_summary and metric_rows disagree: give each metric one value",
            code="metric_value_mismatch", mismatches=mismatched,
        )  # fmt: skip
    if repeated:
        raise Invalid(
            f"metric_rows give {', '.join(repeated)} more than once (splits or seeds?): say which value counts "
            "in metrics_summary",
            code="duplicate_metric_rows", metric_ids=repeated,
        )  # fmt: skip
    return out


def primary_metric_ref(value: Any) -> tuple[str | None, float | None, str | None]:
    """``primary_metric`` as a metric id, or DeepScientist's object ``{metric_id (or name
    or id), value?, direction?}``: returns ``(metric_id, value, direction)``."""
    if value is None:
        return None, None, None
    if isinstance(value, str):
        if not _METRIC_ID_RE.match(value):
            raise Invalid(f"primary_metric {value!r} is not a metric id", code="invalid_primary_metric")
        return value, None, None
    if not isinstance(value, dict):
        raise Invalid("primary_metric must be a metric id or {metric_id, value, direction}", code="invalid_primary_metric")
    metric_id = value.get("metric_id") or value.get("name") or value.get("id")
    if not isinstance(metric_id, str) or not _METRIC_ID_RE.match(metric_id):
        raise Invalid("primary_metric needs a metric_id", code="invalid_primary_metric")
    number = value.get("value")
    if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number)):
        raise Invalid("primary_metric.value must be a finite number", code="invalid_primary_metric")
    direction = None
    if value.get("direction") is not None:
        direction = _direction(value["direction"])
        if direction is None:
            raise Invalid(f"primary_metric.direction {value['direction']!r}: use higher or lower", code="invalid_metric_direction")
    return metric_id, None if number is None else float(number), direction


def merge_directions(given: dict[str, str], from_rows: dict[str, str]) -> dict[str, str]:
    """Directions given as ``metric_directions`` and those metric rows (or a primary
    metric) name, as one mapping; the two may not disagree."""
    out = dict(given)
    for metric_id, direction in from_rows.items():
        if out.setdefault(metric_id, direction) != direction:
            raise Invalid(
                f"metric_directions and metric_rows give {metric_id!r} different directions",
                code="invalid_metric_direction", metric_id=metric_id,
            )  # fmt: skip
    return out


def contract_input(contract: dict[str, Any], directions: dict[str, str]) -> dict[str, Any]:
    """A confirmed (normalised) contract as input for a new confirmation or publication;
    the directions given replace the kept ones (an overwrite then judges the change)."""
    out = {k: v for k, v in contract.items() if k not in ("baseline_id", "variant_id", "primary_metric", "metric_ids", "overwrite")}
    out["metrics"] = {m: {**e, "direction": directions.get(m, e.get("direction"))} for m, e in contract["metrics"].items()}
    return out
