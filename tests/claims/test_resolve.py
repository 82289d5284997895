"""Resolution over many records (the fold is pure: events made here, as a log holds
them): a number that is a rounding of any recorded value resolves to it, whichever of
many runs it is, at any shown precision; a delta between any two runs resolves too."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from hypothesis import given, settings, strategies as st

from ds_events.events.artifact import BaselineConfirmed, MainExperimentRecorded
from ds_events.services.claims import audit_manuscript, claim_sources


def _log(values: list[float]) -> list[MainExperimentRecorded | BaselineConfirmed]:
    base = BaselineConfirmed(
        seq=1, id="e1", baseline_id="b0", baseline_path="baselines/b0", contract_path="baselines/b0/json/metric_contract.json",
        contract={"metrics": {"acc": {"direction": "higher"}}}, metrics_summary={"acc": 0.5}, primary_metric="acc",
    )  # fmt: skip
    runs = [
        MainExperimentRecorded(seq=i + 2, id=f"e{i + 2}", run=f"run{i}", title="t", baseline_id="b0", metrics_summary={"acc": v})
        for i, v in enumerate(values)
    ]
    return [base, *runs]


_VALUE = st.integers(min_value=1, max_value=9999).map(lambda n: n / 10000)


@settings(max_examples=60, deadline=None)
@given(st.lists(_VALUE, min_size=1, max_size=60, unique=True), st.data())
def test_a_rounding_of_any_recorded_value_resolves_to_a_run_that_has_it(values: list[float], data: st.DataObject) -> None:
    events = _log(values)
    pick = data.draw(st.integers(min_value=0, max_value=len(values) - 1))
    decimals = data.draw(st.integers(min_value=0, max_value=2))
    written = (Decimal(repr(values[pick])) * 100).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    audit = audit_manuscript(f"It reaches {written}% accuracy.\n", claim_sources(events))
    (claim,) = audit.claims
    assert claim.status == "resolved", (written, claim.reason)
    assert f"main run run{pick}" in {s.subject for s in claim.sources}
    for s in claim.sources:  # every source is really a rounding of what it names
        assert (Decimal(repr(s.value)) * 100).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP) == written


@settings(max_examples=40, deadline=None)
@given(st.lists(_VALUE, min_size=2, max_size=40, unique=True), st.data())
def test_a_delta_between_any_two_runs_resolves(values: list[float], data: st.DataObject) -> None:
    a, b = data.draw(st.lists(st.integers(min_value=0, max_value=len(values) - 1), min_size=2, max_size=2, unique=True))
    delta = (Decimal(repr(values[a])) - Decimal(repr(values[b]))) * 100
    written = delta.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    sign = "+" if written >= 0 else "\u2212"
    audit = audit_manuscript(f"run{a} differs from run{b} by {sign}{abs(written)} points.\n", claim_sources(_log(values)))
    (claim,) = audit.claims
    assert claim.mention.kind == "delta" and claim.status == "resolved", (written, claim.reason)
    assert any(s.subject == f"main run run{a} - main run run{b}" for s in claim.sources)
