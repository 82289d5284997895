"""Property tests for bad input: whatever a caller sends, a record is either written whole
or refused with a stable code and nothing written; a branch name we accept git accepts."""

from __future__ import annotations

import subprocess

from hypothesis import HealthCheck, given, settings, strategies as st

from ds_events.artifacts import git
from ds_events.errors import ServiceError
from ds_events.home import Home
from ds_events.services import artifacts
from ds_events.services.artifacts.commands import ConfirmBaseline, Record
from ds_events.services.commands import decode_command

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
_payloads = st.dictionaries(
    st.sampled_from(["kind", "title", "verdict", "action", "reason", "message", "run_kind", "artifact_id", "paths", "x"]),
    st.sampled_from(["idea", "decision", "run", "continue", "../x", "/etc", "ok", ""]) | _json,
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=_payloads | _json)
def test_any_record_payload_is_written_whole_or_refused_with_a_code(home: Home, payload: object) -> None:
    quest = home.open_quest("p") if "p" in home.quest_ids() else home.create_quest("props", quest_id="p")
    with quest:
        seq = quest.log.last_seq
        try:
            r = artifacts.record(quest, decode_command(Record, {"payload": payload}))
        except ServiceError as exc:
            assert exc.code and exc.message
            assert quest.log.last_seq == seq
            return
        assert quest.log.last_seq == seq + 1
        assert (quest.root / r.path).is_file()


@settings(max_examples=60, deadline=None)
@given(name=st.text(alphabet="abcrun/._-~^: @{}x1\\*?[", min_size=1, max_size=24))
def test_a_branch_name_we_accept_is_one_git_accepts(name: str) -> None:
    try:
        accepted = git.validate_branch_name(name, "run")
    except ServiceError as exc:
        assert exc.code == "invalid_branch_name"
        return
    done = subprocess.run(["git", "check-ref-format", "--branch", accepted], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == accepted


_metric_values = st.floats(allow_nan=True) | st.integers() | st.text(max_size=4) | st.booleans() | st.none() | st.lists(st.integers(),
    max_size=2)
_entries = st.dictionaries(
    st.sampled_from(["description", "derivation", "origin_path", "source_ref", "direction", "metric_id"]),
    st.sampled_from(["d", "", "higher", "lower", "up"]) | _json,
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contract=st.fixed_dictionaries({"metrics": st.dictionaries(st.sampled_from(["acc", "loss"]), _entries, max_size=2) | _json})
    | _json,
    metrics=st.dictionaries(st.sampled_from(["acc", "loss", "bad id"]), _metric_values, max_size=3) | _json,
    primary=st.sampled_from(["acc", "loss"]) | _json,
    directions=st.none() | st.dictionaries(st.sampled_from(["acc", "loss"]), st.sampled_from(["higher", "lower", "up"]) | _json,
        max_size=2),
)
def test_any_confirm_baseline_input_is_confirmed_or_refused_with_a_code(
    home: Home, contract: object, metrics: object, primary: object, directions: object
) -> None:
    quest = home.open_quest("c") if "c" in home.quest_ids() else home.create_quest("props", quest_id="c")
    with quest:
        seq = quest.log.last_seq
        try:
            args = dict(
                baseline_path="b", baseline_id="base", metric_contract=contract, metrics_summary=metrics,
                primary_metric=primary, metric_directions=directions,
            )  # fmt: skip
            r = artifacts.confirm_baseline(quest, decode_command(ConfirmBaseline, args))
        except ServiceError as exc:
            assert exc.code and exc.message
            assert quest.log.last_seq == seq
            return
        assert quest.log.last_seq == seq + 1 and (quest.root / r.contract_path).is_file()
