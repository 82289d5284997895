"""``ds doctor`` and ``GET /api/doctor``: is this machine ready to run quests?

:func:`run_doctor` runs every check and returns one :class:`Report`; the CLI prints it
and exits 0 only when no check failed (a warning does not fail), the daemon answers it
as JSON. The checks, in the order shown:

===========================  ==========================================================
``config``                   ``DS_HOME/config.yaml`` passes the loader's validation
``store``                    the file store's home writable, or the database connects
``disk``                     free space under ``DS_HOME`` (limits: :mod:`.limits`)
``git``, ``pygit2``          the executable and its version; the binding and libgit2's
``runner.<name>.cli``        for ``runner.name`` and each ``runner.commands`` entry: the
``runner.<name>.version``    agent CLI found, its version in the tested range, its
``runner.<name>.provider``   provider endpoint reachable (proxy variables honoured)
``mcp.<namespace>``          memory, artifact and bash_exec start and list their tools
===========================  ==========================================================

This is an adapter (layer 4): it starts processes, opens sockets and speaks MCP, and
it changes nothing of the user's (the MCP servers run against a scratch home).
"""

from __future__ import annotations

import asyncio

from ds_events.config import RunnerConfig
from ds_events.home import Home

from .check import Check, Report, Status
from .limits import TESTED, VersionRange
from .mcp_check import check_mcp_servers
from .runner_checks import check_runner, configured_runners
from .system_checks import check_config, check_disk, check_git, check_pygit2, check_store

__all__ = ["run_doctor", "Check", "Report", "Status", "TESTED", "VersionRange"]


async def run_doctor(home: Home) -> Report:
    """Every check of :mod:`ds_events.doctor` against ``home``; the slow ones (agent
    CLIs, endpoints, MCP servers) run side by side."""
    config_check, config = await asyncio.to_thread(check_config, home)
    local = await asyncio.to_thread(lambda: [check_store(home), check_disk(home), check_git(), check_pygit2()])
    if config is None:
        runners: list[asyncio.Future[list[Check]]] = []
        skipped = [Check(name="runner", status="skip", detail="the config is not valid: its runners are unknown")]
    else:
        runner_config: RunnerConfig = config.runner
        runners = [asyncio.ensure_future(check_runner(n, runner_config)) for n in configured_runners(runner_config)]
        skipped = []
    servers = asyncio.ensure_future(check_mcp_servers())
    runner_checks = [c for found in await asyncio.gather(*runners) for c in found]
    checks = [config_check, *local, *skipped, *runner_checks, *await servers]
    return Report(ok=all(c.status != "fail" for c in checks), home=str(home.root), checks=checks)
