"""What ``ds doctor`` holds the machine to, in one place: the agent versions the runners
were tested with, the free disk a home needs, and how long each probe may take.

The tested ranges come from what the repository pins and records:

- codex: ``fixtures/install_agent.sh codex`` installs ``@openai/codex`` 0.169.0, the version
  the end-to-end tests and the codex runner's config (tool namespaces ``mcp__<server>``,
  ``wire_api = "responses"``) were written against; later minor versions are untested.
- claude: ``fixtures/claude/stream.jsonl`` was recorded from Claude Code 2.0.50
  (``claude_code_version`` in its ``system/init`` line); its stream-json format is the
  2.x one.
- acp: any agent that speaks the Agent Client Protocol version the SDK in use speaks
  (``acp.PROTOCOL_VERSION``, 1): checked by an ``initialize`` handshake, since ACP
  agents have no common ``--version``.
"""

from __future__ import annotations

import re

import msgspec

__all__ = [
    "VersionRange",
    "TESTED",
    "ACP_PROTOCOL_VERSION",
    "DEFAULT_ENDPOINTS",
    "DISK_WARN_BYTES",
    "DISK_FAIL_BYTES",
    "VERSION_TIMEOUT",
    "ENDPOINT_TIMEOUT",
    "MCP_TIMEOUT",
    "parse_version",
]


class VersionRange(msgspec.Struct, frozen=True, kw_only=True):
    """``low <= version < below``; ``source`` says where the range comes from."""

    low: str
    below: str
    source: str

    def holds(self, version: str) -> bool:
        return _key(self.low) <= _key(version) < _key(self.below)

    def text(self) -> str:
        return f">= {self.low}, < {self.below}"


TESTED: dict[str, VersionRange] = {
    "codex": VersionRange(low="0.169.0", below="0.170.0", source="fixtures/install_agent.sh pins @openai/codex 0.169.0"),
    "claude": VersionRange(low="2.0.0", below="3.0.0", source="fixtures/claude/stream.jsonl was recorded from Claude Code 2.0.50"),
}
ACP_PROTOCOL_VERSION = 1  # acp.PROTOCOL_VERSION of the SDK we pin (tests check they agree)

# Where each runner's agent talks to its model when nothing is configured.
DEFAULT_ENDPOINTS = {"codex": "https://api.openai.com/v1", "claude": "https://api.anthropic.com"}

DISK_WARN_BYTES = 1024**3  # under 1 GiB free under DS_HOME: a warning
DISK_FAIL_BYTES = 100 * 1024**2  # under 100 MiB: a failure (logs, checkpoints and bash output stop)

VERSION_TIMEOUT = 15.0  # an agent CLI's ``--version`` (a Node program on a busy machine)
ENDPOINT_TIMEOUT = 8.0  # one HTTP request to a provider: any answer in time means reachable
MCP_TIMEOUT = 90.0  # one MCP server started, initialised and its tools listed

_VERSION = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> str | None:
    """The first ``X.Y[.Z]`` in ``text`` (``codex-cli 0.169.0``, ``2.0.50 (Claude Code)``)."""
    match = _VERSION.search(text)
    if match is None:
        return None
    return ".".join(g or "0" for g in match.groups())


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))
