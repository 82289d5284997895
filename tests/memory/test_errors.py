"""The statuses of a memory write that wrote nothing (``STATUSES``) are exactly the ones
the write answers with, and none of them is a raised code. (That every raised code is
catalogued, once, and every catalogued one raised is ``tests/test_error_catalogue.py``'s.)"""

from __future__ import annotations

import ast

from ds_events.services.memory.errors import CODES, STATUSES
from tests.conftest import REPO


def test_the_write_statuses_that_write_nothing_are_the_ones_a_write_answers_with() -> None:
    source = (REPO / "ds_events/services/memory/cards.py").read_text()
    answered = {
        node.value.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.keyword) and node.arg == "status" and isinstance(node.value, ast.Constant)
    }
    assert {"written", "duplicate_candidates", "config_polluted"} <= answered  # the scan sees the write's answers
    assert set(STATUSES) == answered - {"written", "promoted", "configured"}
    assert not set(STATUSES) & set(CODES)
