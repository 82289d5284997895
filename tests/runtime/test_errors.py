"""The runtime's error catalogue and the codes raised by its services and runners are one
list; the command vocabulary's catalogue holds the codes decode_command raises."""

from __future__ import annotations

from ds_events.services.commands import CODES as SHARED
from ds_events.services.runtime.errors import CODES
from tests.conftest import REPO
from tests.memory.test_errors import check_catalogue, raised_codes


def test_every_code_the_runtime_and_its_runners_raise_is_catalogued_and_every_catalogued_code_is_raised() -> None:
    raised = raised_codes([REPO / "ds_events/services/runtime", REPO / "ds_events/runners"])
    assert {"unknown_skill", "invalid_run_id", "unknown_turn", "bad_trajectory"} <= set(raised)  # the scan sees both parts
    assert check_catalogue(CODES, raised, set(SHARED)) == []


def test_the_command_vocabulary_catalogues_exactly_the_codes_its_shared_modules_raise() -> None:
    raised = raised_codes([REPO / "ds_events/services/commands.py", REPO / "ds_events/services/tool_calls.py"])
    assert {"unknown_argument", "missing_argument", "invalid_argument"} <= set(SHARED)
    assert check_catalogue(SHARED, raised, set()) == []
