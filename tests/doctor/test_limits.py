"""The tested ranges and the version parsing ``ds doctor`` compares against."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import acp
from ds_events.doctor.limits import ACP_PROTOCOL_VERSION, DISK_FAIL_BYTES, DISK_WARN_BYTES, TESTED, parse_version

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("printed", "version"),
    [("codex-cli 0.169.0", "0.169.0"), ("2.0.50 (Claude Code)", "2.0.50"), ("tool v1.2", "1.2.0"), ("no digits", None),
     ("build 20260101 ships 0.9.1", "0.9.1")],
)  # fmt: skip
def test_the_version_is_the_first_dotted_number_printed(printed: str, version: str | None) -> None:
    assert parse_version(printed) == version


def test_the_codex_range_holds_the_version_install_agent_pins() -> None:
    pinned = re.search(r'VERSION="\$\{DS_CODEX_VERSION:-([0-9.]+)\}"', (REPO / "fixtures" / "install_agent.sh").read_text())
    assert pinned is not None and TESTED["codex"].holds(pinned.group(1))
    assert not TESTED["codex"].holds("0.168.9") and not TESTED["codex"].holds("0.170.0")


def test_the_claude_range_holds_the_version_the_fixture_stream_was_recorded_from() -> None:
    recorded = re.search(r'"claude_code_version":"([0-9.]+)"', (REPO / "fixtures" / "claude" / "stream.jsonl").read_text())
    assert recorded is not None and TESTED["claude"].holds(recorded.group(1))


def test_the_acp_protocol_version_is_the_sdks_and_the_disk_limits_are_ordered() -> None:
    assert ACP_PROTOCOL_VERSION == acp.PROTOCOL_VERSION
    assert 0 < DISK_FAIL_BYTES < DISK_WARN_BYTES
