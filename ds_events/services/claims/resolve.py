"""The claim audit: every number a manuscript states, resolved to the log's records.

What a number can match (every recording, current or superseded, see :mod:`.sources`):

- a metric value of a main run, a baseline confirmation or an analysis slice;
- a delta: a run against the baseline confirmation it was compared with (and against
  the baseline's current confirmation), a run against another run, a slice against its
  campaign's parent run and against the baseline; absolute (in the metric's units, or
  in points for a fraction written as per cent) or, for a number with ``%``, relative
  (the delta as a share of the reference);
- a count: main runs, seeds of a run (``details.seeds`` / ``num_seeds`` / ``n_seeds``
  / ``num_runs``), slices of a campaign (all, or completed), confirmed baselines,
  campaigns.

Rounding: a number matches a value when the value rounds to it at the decimals the
manuscript shows (half up or half even; a fraction 0.91234 may be written 91.2 or
91.2%). The metric contract may declare a precision per metric, ``decimals`` (or
``precision`` as an integer): the number of decimals the metric is reported to, in its
own units (so ``decimals: 3`` allows 0.912 and 91.2%, not 0.91 nor 91%). A number shown
coarser than that is not resolved, and the reason says so. Without it, the manuscript's
own precision is the rule: 71.2 matches 71.234, not 71.3.

A number written with a sign must have the delta's sign; "improves by 1.2" is compared
without one (whether a drop improves depends on the metric's direction).
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from itertools import permutations

import msgspec

from ds_events.events.artifact import AnalysisSliceRecorded, BaselineConfirmed, MainExperimentRecorded

from .commands import CitedEvent, Claim, ClaimAudit, NumberMention, SkippedNumber, Source
from .numbers import find_numbers
from .sources import ClaimSources, Recording, cited

__all__ = ["audit_manuscript", "manuscript_hash"]


def audit_manuscript(text: str, state: ClaimSources, *, path: str = "") -> ClaimAudit:
    """Audit ``text`` against ``state`` (:func:`~.sources.quest_sources` of the quest):
    each number with its line and column, what it resolves to or why not, and the
    numbers skipped (with why). ``path`` is where the manuscript is, for the report."""
    mentions, skipped = find_numbers(text)
    candidates = _Candidates.of(state)
    claims: list[Claim] = []
    for mention in mentions:
        claim = _resolve(mention, candidates)
        if claim.status == "unresolved" and mention.setup:
            # "90 epochs", "a learning rate of 0.1": part of the setup, which the log
            # does not record as a result; kept (skipped) only if it matches nothing.
            skipped.append(SkippedNumber(text=mention.text, line=mention.line, column=mention.column, reason=mention.setup))
            continue
        claims.append(claim)
    skipped.sort(key=lambda s: (s.line, s.column))
    return ClaimAudit(
        claims=claims, skipped=skipped, last_seq=state.last_seq, manuscript_sha256=manuscript_hash(text),
        manuscript_path=path,
    )  # fmt: skip


def manuscript_hash(text: str) -> str:
    """The sha256 (hex) of the manuscript's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- candidates -------------------------------------------------------------------------


class _Candidate(msgspec.Struct, kw_only=True, frozen=True):
    """Something a number may match: ``value`` exact, ``operands`` the values it is
    made of (a delta's two; to decide whether the metric is a fraction)."""

    kind: str  # main_run | baseline | slice | delta | relative_delta | count
    subject: str
    metric: str
    value: Decimal
    operands: tuple[Decimal, ...]
    events: list[CitedEvent]
    commit: str | None
    contract: dict[str, object]
    superseded: str
    names: tuple[str, ...]  # ids a sentence may name it by
    count_of: str = ""  # for a count: runs | seeds | slices | baselines | campaigns


class _Index:
    """Candidates by magnitude (``|value|`` as is and x 100), so that a number is
    compared exactly only with the few whose magnitude it can be a rounding of: a quest
    of a hundred runs has tens of thousands of deltas."""

    def __init__(self, candidates: list[_Candidate]) -> None:
        self.candidates = candidates
        entries = sorted((abs(float(c.value)) * scale, i) for i, c in enumerate(candidates) for scale in (1, 100))
        self.keys = [k for k, _ in entries]
        self.order = [i for _, i in entries]

    def near(self, x: Decimal, decimals: int) -> list[_Candidate]:
        """The candidates whose magnitude (either way) lies within half a unit of the
        last shown decimal of ``|x|``, in their first order."""
        target = abs(float(x))
        half = 0.5 * 10.0**-decimals + 1e-9 * max(1.0, target)
        lo, hi = bisect_left(self.keys, target - half), bisect_right(self.keys, target + half)
        return [self.candidates[i] for i in sorted(set(self.order[lo:hi]))]

    def around(self, x: Decimal, width: int = 12) -> list[_Candidate]:
        """The candidates nearest in magnitude to ``|x|`` (either way)."""
        at = bisect_left(self.keys, abs(float(x)))
        return [self.candidates[i] for i in sorted(set(self.order[max(0, at - width) : at + width]))]


class _Candidates:
    """Everything a number of the manuscript may match, with the value and delta
    candidates indexed by magnitude."""

    def __init__(self, values: list[_Candidate], deltas: list[_Candidate], counts: list[_Candidate]) -> None:
        self.values, self.deltas, self.counts = values, deltas, counts
        self.value_index, self.delta_index = _Index(values), _Index(deltas)

    @classmethod
    def of(cls, state: ClaimSources) -> _Candidates:
        values: list[_Candidate] = []
        deltas: list[_Candidate] = []
        for rec in state.baselines:
            e = rec.event
            assert isinstance(e, BaselineConfirmed)
            for metric, v in e.metrics_summary.items():
                values.append(_value("baseline", f"baseline {e.baseline_id}", metric, v, [rec], None,
                                     _entry(e, metric), rec.superseded, (e.baseline_id,)))  # fmt: skip
        for rec in state.runs:
            e = rec.event
            assert isinstance(e, MainExperimentRecorded)
            then = state.confirmation_at(e.baseline_id, e.seq) if e.baseline_id else None
            for metric, v in e.metrics_summary.items():
                values.append(_value("main_run", f"main run {e.run}", metric, v, [rec], e.head_sha,
                                     _entry(then, metric), rec.superseded, (e.run,)))  # fmt: skip
            now = state.current_confirmation(e.baseline_id) if e.baseline_id else None
            for base in {id(b): b for b in (then, now) if b is not None}.values():
                deltas += _deltas(rec, base, f"main run {e.run} - baseline {e.baseline_id}", e.head_sha, (e.run, e.baseline_id))
        current_runs = [r for r in state.runs if r.current]
        for a, b in permutations(current_runs, 2):
            ea, eb = a.event, b.event
            assert isinstance(ea, MainExperimentRecorded) and isinstance(eb, MainExperimentRecorded)
            deltas += _deltas(a, b, f"main run {ea.run} - main run {eb.run}", ea.head_sha, (ea.run, eb.run))
        for rec in state.slices:
            e = rec.event
            assert isinstance(e, AnalysisSliceRecorded)
            campaign = state.campaigns.get(e.campaign_id)
            parent = state.current_run(campaign.parent_run) if campaign is not None and campaign.parent_run else None
            reference = _reference_confirmation(state, parent)
            name = f"slice {e.campaign_id}/{e.slice_id}"
            for metric, v in e.metrics_summary.items():
                values.append(_value("slice", name, metric, v, [rec], e.head_sha, _entry(reference, metric), rec.superseded,
                                     (e.slice_id, e.campaign_id)))  # fmt: skip
            if parent is not None:
                run = parent.event
                assert isinstance(run, MainExperimentRecorded)
                deltas += _deltas(rec, parent, f"{name} - main run {run.run}", e.head_sha, (e.slice_id, run.run),
                                  contract_from=reference)  # fmt: skip
            if reference is not None:
                baseline_rec = state.current_confirmation(reference.baseline_id)
                if baseline_rec is not None:
                    deltas += _deltas(rec, baseline_rec, f"{name} - baseline {reference.baseline_id}", e.head_sha,
                                      (e.slice_id, reference.baseline_id))  # fmt: skip
        return cls(values, deltas, _counts(state))


def _value(kind: str, subject: str, metric: str, v: float, recs: list[Recording], commit: str | None,
           contract: dict[str, object], superseded: str, names: tuple[str, ...]) -> _Candidate:  # fmt: skip
    exact = _dec(v)
    return _Candidate(
        kind=kind, subject=subject, metric=metric, value=exact, operands=(exact,), events=[cited(r.event) for r in recs],
        commit=commit, contract=contract, superseded=superseded, names=(*names, metric),
    )  # fmt: skip


def _deltas(
    rec: Recording, ref: Recording, subject: str, commit: str | None, names: tuple[str, ...],
    *, contract_from: BaselineConfirmed | None = None,
) -> list[_Candidate]:  # fmt: skip
    """``rec``'s metrics minus ``ref``'s, absolute and relative, for the metrics both have."""
    a, b = rec.event, ref.event
    assert isinstance(a, (MainExperimentRecorded, AnalysisSliceRecorded, BaselineConfirmed))
    assert isinstance(b, (MainExperimentRecorded, AnalysisSliceRecorded, BaselineConfirmed))
    superseded = rec.superseded or ref.superseded
    contract_event = contract_from or (b if isinstance(b, BaselineConfirmed) else None)
    out: list[_Candidate] = []
    events = [cited(a), cited(b)]
    for metric, va in a.metrics_summary.items():
        if metric not in b.metrics_summary:
            continue
        x, y = _dec(va), _dec(b.metrics_summary[metric])
        entry = _entry(contract_event, metric)
        out.append(_Candidate(
            kind="delta", subject=subject, metric=metric, value=x - y, operands=(x, y), events=events, commit=commit,
            contract=entry, superseded=superseded, names=(*names, metric),
        ))  # fmt: skip
        if y != 0:
            out.append(_Candidate(
                kind="relative_delta", subject=subject, metric=metric, value=(x - y) / abs(y) * 100, operands=(),
                events=events, commit=commit, contract={k: v for k, v in entry.items() if k not in ("decimals", "precision")},
                superseded=superseded, names=(*names, metric),
            ))  # fmt: skip
    return out


def _counts(state: ClaimSources) -> list[_Candidate]:
    out: list[_Candidate] = []

    def count(of: str, subject: str, n: int, recs: list[CitedEvent], names: tuple[str, ...] = ()) -> None:
        out.append(_Candidate(
            kind="count", subject=subject, metric="", value=Decimal(n), operands=(), events=recs, commit=None, contract={},
            superseded="", names=names, count_of=of,
        ))  # fmt: skip

    runs = [r for r in state.runs if r.current]
    count("runs", "main runs recorded", len(runs), [cited(r.event) for r in runs])
    for rec in runs:
        e = rec.event
        assert isinstance(e, MainExperimentRecorded)
        seeds = _seeds(e.details) or _seeds(e.report)
        if seeds is not None:
            count("seeds", f"seeds of main run {e.run}", seeds, [cited(e)], (e.run,))
            count("runs", f"seeds of main run {e.run}", seeds, [cited(e)], (e.run,))
    for campaign in state.campaigns.values():
        made = cited(campaign)
        count("slices", f"slices of campaign {campaign.campaign_id}", len(campaign.slices), [made], (campaign.campaign_id,))
        done = [r for r in state.slices if r.current and r.event.campaign_id == campaign.campaign_id]  # type: ignore[union-attr]
        count("slices", f"completed slices of campaign {campaign.campaign_id}", len(done), [made, *(cited(r.event) for r in done)],
              (campaign.campaign_id,))  # fmt: skip
    count("campaigns", "analysis campaigns", len(state.campaigns), [cited(c) for c in state.campaigns.values()])
    confirmed = {r.event.baseline_id: r for r in state.baselines if r.current}  # type: ignore[union-attr]
    count("baselines", "confirmed baselines", len(confirmed), [cited(r.event) for r in confirmed.values()])
    return out


def _seeds(facts: dict[str, object]) -> int | None:
    for key in ("seeds", "num_seeds", "n_seeds", "num_runs", "n_runs", "repeats"):
        value = facts.get(key)
        if isinstance(value, list):
            return len(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _reference_confirmation(state: ClaimSources, parent: Recording | None) -> BaselineConfirmed | None:
    if parent is not None:
        run = parent.event
        assert isinstance(run, MainExperimentRecorded)
        if run.baseline_id:
            now = state.current_confirmation(run.baseline_id)
            if now is not None:
                assert isinstance(now.event, BaselineConfirmed)
                return now.event
    standing = [r for r in state.baselines if r.current]
    event = standing[-1].event if standing else None
    return event if isinstance(event, BaselineConfirmed) else None


def _entry(confirmation: Recording | BaselineConfirmed | None, metric: str) -> dict[str, object]:
    """The metric's contract entry (as the confirmation holds it), with the seq of the
    confirmation it comes from; {} without one."""
    event = confirmation.event if isinstance(confirmation, Recording) else confirmation
    if not isinstance(event, BaselineConfirmed):
        return {}
    entry = (event.contract.get("metrics") or {}).get(metric)
    if not isinstance(entry, dict):
        return {}
    kept = {k: entry[k] for k in ("direction", "description", "decimals", "precision") if k in entry}
    return {**kept, "baseline_id": event.baseline_id, "confirmed_seq": event.seq}


# -- matching ---------------------------------------------------------------------------


class _Match(msgspec.Struct, kw_only=True, frozen=True):
    candidate: _Candidate
    shown: str
    too_coarse: str = ""  # set when it matches only ignoring the contract's precision


def _resolve(mention: NumberMention, candidates: _Candidates) -> Claim:
    x = Decimal(mention.number)
    if mention.negative:
        x = -x
    if mention.kind == "count":
        pool = [c for c in candidates.counts if c.count_of == mention.count_noun]
        found = [_Match(candidate=c, shown=f"{c.value} {mention.count_noun}") for c in pool if c.value == x]
    elif mention.kind == "delta":
        near = candidates.delta_index.near(x, mention.decimals)
        found = [m for c in near if (m := _match_delta(mention, x, c)) is not None]
        if not found and mention.explicit_sign and mention.negative and not mention.points:
            near = candidates.value_index.near(x, mention.decimals)
            found = [m for c in near if (m := _match_value(mention, x, c)) is not None]
    else:
        near = candidates.value_index.near(x, mention.decimals)
        found = [m for c in near if (m := _match_value(mention, x, c)) is not None]
    good = [m for m in found if not m.too_coarse]
    coarse = [m for m in found if m.too_coarse]
    named = _named(mention.sentence)
    good.sort(key=lambda m: (bool(m.candidate.superseded), not (named & set(m.candidate.names)), m.candidate.events[0].seq))
    current = [m for m in good if not m.candidate.superseded]
    if current:
        return Claim(mention=mention, status="resolved", sources=[_source(m) for m in good])
    if good:
        why = "; ".join(sorted({m.candidate.superseded for m in good}))
        return Claim(mention=mention, status="superseded", sources=[_source(m) for m in good],
                     reason=f"matches only a superseded record: {why}")  # fmt: skip
    if coarse:
        return Claim(mention=mention, status="unresolved", sources=[_source(m) for m in coarse], reason=coarse[0].too_coarse)
    return Claim(mention=mention, status="unresolved", reason=_nothing(mention, x, candidates))


def _match_value(mention: NumberMention, x: Decimal, c: _Candidate) -> _Match | None:
    for scale in _scales(mention, c):
        hit = _rounds_to(c.value * scale, x, mention.decimals)
        if hit:
            return _checked(mention, c, scale, hit)
    return None


def _match_delta(mention: NumberMention, x: Decimal, c: _Candidate) -> _Match | None:
    if c.kind == "relative_delta":
        if not mention.percent or mention.points:
            return None
        scales = [Decimal(1)]
    else:
        scales = _scales(mention, c)
    for scale in scales:
        value = c.value * scale
        if mention.explicit_sign:
            hit = _rounds_to(value, x, mention.decimals)
        else:
            hit = _rounds_to(abs(value), abs(x), mention.decimals)
        if hit:
            return _checked(mention, c, scale, hit)
    return None


def _scales(mention: NumberMention, c: _Candidate) -> list[Decimal]:
    """How the number may be written against ``c``: as is, or x 100 (a fraction written
    as per cent or points; unmarked only with decimals, as in a table of 91.2)."""
    fraction = all(abs(v) <= 1 for v in c.operands)
    if mention.percent or mention.points:
        return [Decimal(100)] if fraction else [Decimal(1)]
    return [Decimal(1), Decimal(100)] if fraction and mention.decimals >= 1 else [Decimal(1)]


def _rounds_to(value: Decimal, x: Decimal, decimals: int) -> str:
    """The rounding of ``value`` at ``decimals`` if it gives ``x`` ("" if not)."""
    quantum = Decimal(1).scaleb(-decimals)
    for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN):
        try:
            rounded = value.quantize(quantum, rounding=mode)
        except InvalidOperation:
            return ""
        if rounded == x:
            return str(rounded)
    return ""


def _checked(mention: NumberMention, c: _Candidate, scale: Decimal, rounded: str) -> _Match:
    exact = _plain(c.value)
    how = f"{exact} x 100" if scale != 1 else exact
    unit = "%" if (mention.percent and c.kind != "relative_delta") else ""
    shown = f"{how} rounded to {mention.decimals} decimal{'s' if mention.decimals != 1 else ''} = {rounded}{unit}"
    if c.kind == "relative_delta":
        places = f"{mention.decimals} decimal{'s' if mention.decimals != 1 else ''}"
        shown = f"relative change {_plain(c.value.quantize(Decimal('0.0001')))}% rounded to {places} = {rounded}%"
    declared = _declared_decimals(c.contract)
    if declared is not None:
        needed = max(declared - 2, 0) if scale == 100 else declared
        if mention.decimals < needed:
            where = f"baseline {c.contract.get('baseline_id')}'s metric contract (seq {c.contract.get('confirmed_seq')})"
            return _Match(candidate=c, shown=shown, too_coarse=(
                f"{mention.text} is {c.subject} {c.metric} = {exact} rounded to {mention.decimals} decimals, coarser than "
                f"{where} allows: {c.metric} is reported to {declared} decimals ({needed} as written here)"
            ))  # fmt: skip
    return _Match(candidate=c, shown=shown)


def _declared_decimals(contract: dict[str, object]) -> int | None:
    for key in ("decimals", "precision"):
        value = contract.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 12:
            return value
    return None


def _source(m: _Match) -> Source:
    c = m.candidate
    return Source(
        kind=c.kind, subject=c.subject, metric=c.metric, value=float(c.value), shown=m.shown, events=c.events, commit=c.commit,
        contract=c.contract, superseded=c.superseded,
    )  # fmt: skip


def _nothing(mention: NumberMention, x: Decimal, candidates: _Candidates) -> str:
    """Why nothing matched, with the nearest current record of the same kind."""
    if mention.kind == "count":
        pool = [c for c in candidates.counts if c.count_of == mention.count_noun]
        if not pool:
            return f"the log records no {mention.count_noun} to count"
        near = ", ".join(f"{c.subject}: {c.value}" for c in pool[:4])
        return f"no count of {mention.count_noun} in the log is {x} ({near})"
    index = candidates.delta_index if mention.kind == "delta" else candidates.value_index
    what = "delta" if mention.kind == "delta" else "metric value"
    if not any(not c.superseded for c in index.candidates):
        return f"the log records no {what} to match"
    pool = [c for c in index.around(x) if not c.superseded] or [c for c in index.candidates if not c.superseded]
    if not pool:
        return f"the log records no {what} to match"
    best: tuple[Decimal, _Candidate, Decimal] | None = None
    for c in pool:
        for scale in _scales(mention, c) if c.kind != "relative_delta" else [Decimal(1)]:
            v = c.value * scale
            distance = abs(abs(v) - abs(x)) if not mention.explicit_sign else abs(v - x)
            if best is None or distance < best[0]:
                best = (distance, c, scale)
    assert best is not None
    _, c, scale = best
    written = f" ({_plain(c.value * scale)} as written here)" if scale != 1 else ""
    return f"no recorded {what} rounds to {mention.text}; nearest: {c.subject} {c.metric} = {_plain(c.value)}{written}"


def _named(sentence: str) -> set[str]:
    return set(re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", sentence))


def _dec(v: float) -> Decimal:
    return Decimal(repr(float(v)))


def _plain(d: Decimal) -> str:
    text = format(d.normalize(), "f")
    return text if text != "-0" else "0"
