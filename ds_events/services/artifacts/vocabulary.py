"""DeepScientist's words for a refused metric-contract call, carried beside our own.

DeepScientist's callers read ``error_code`` and ``validation_stage`` from a refused
``confirm_baseline`` / ``record_main_experiment`` (its ``MetricContractValidationError``
payload); ours answer with our ``error`` code. :func:`metric_stage` wraps the services
whose refusals DeepScientist names so, and adds both fields to the refusal's details
(our code, message and details stay as they are; the refusal still writes nothing).
This table is the one place where those names live.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, ParamSpec, TypeVar

from ds_events.errors import ServiceError

__all__ = ["Stage", "metric_stage", "ds_error_code"]

Stage = Literal["baseline", "main_experiment"]

P = ParamSpec("P")
R = TypeVar("R")

# Our codes that are a metric-contract validation at each stage, and DeepScientist's
# code for each (None: decided by the problems, see ds_error_code).
_CODES: dict[Stage, dict[str, str | None]] = {
    "baseline": {
        "invalid_metric_contract": None,
        "unknown_primary_metric": "baseline_metric_values_missing",
        "invalid_metrics_summary": "baseline_metric_values_missing",
        "metric_value_mismatch": "metric_contract_validation_failed",
        "primary_metric_mismatch": "metric_contract_validation_failed",
        "invalid_primary_metric": "metric_contract_validation_failed",
        "invalid_metric_direction": "metric_contract_validation_failed",
    },
    "main_experiment": {
        "missing_metric_ids": "main_experiment_metric_validation_failed",
        "metric_direction_mismatch": "main_experiment_metric_validation_failed",
        "evaluation_protocol_mismatch": "main_experiment_metric_validation_failed",
        "invalid_metric_direction": "main_experiment_metric_validation_failed",
        "invalid_metric_rows": "main_experiment_metric_validation_failed",
        "invalid_metrics_summary": "main_experiment_metric_validation_failed",
        "no_confirmed_baseline": "baseline_metric_contract_json_missing",
        "baseline_not_confirmed": "baseline_metric_contract_json_missing",
    },
}


def ds_error_code(stage: Stage, exc: ServiceError) -> str | None:
    """DeepScientist's ``error_code`` for our refusal ``exc`` at ``stage``, or None when
    DeepScientist would not call it a metric-contract failure."""
    table = _CODES[stage]
    if exc.code not in table:
        return None
    fixed = table[exc.code]
    if fixed is not None:
        return fixed
    problems: list[dict[str, Any]] = exc.details.get("problems") or []
    missing = [m for p in problems for m in p.get("missing", [])]
    if not problems:
        return "baseline_metric_contract_empty"  # no entries at all, or not an object
    if "value in metrics_summary" in missing:
        return "baseline_metric_values_missing"
    if "contract entry" in missing:
        return "baseline_metric_contract_missing_entries"
    if missing:
        return "baseline_metric_explanations_missing"
    return "metric_contract_validation_failed"


def metric_stage(stage: Stage) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A service whose metric-contract refusals carry DeepScientist's ``error_code`` and
    ``validation_stage`` (``stage``) beside our ``error``."""

    def wrap(service: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(service)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return service(*args, **kwargs)
            except ServiceError as exc:
                code = ds_error_code(stage, exc)
                if code is not None:
                    exc.details.setdefault("error_code", code)
                    exc.details.setdefault("validation_stage", stage)
                    if stage == "baseline" and "problems" in exc.details:
                        # DeepScientist lists the metrics a refused contract names, one row each
                        exc.details.setdefault("baseline_metric_details", exc.details["problems"])
                raise

        return run

    return wrap
