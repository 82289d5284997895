"""The ``ds`` command line: a thin shell over the service API.

Every failure prints one line that says what to do, on stderr, and exits non-zero
(2 for usage errors, 1 otherwise).
"""

from __future__ import annotations

import errno
import sys

import click

from ds_events.errors import DiskFull, LogError, LogUnavailable, ServiceError
from ds_events.events import EventDecodeError

from .common import CliError, cli

__all__ = ["cli", "main", "CliError", "COMMANDS"]

# Command -> the module that defines it, imported only when the command runs (see
# LazyGroup): `ds events tail` never imports git, aiohttp or the bash helpers.
COMMANDS: dict[str, str] = {
    "init": "ds_events.cli.quest",
    "quest": "ds_events.cli.quest",
    "message": "ds_events.cli.quest",
    "control": "ds_events.cli.quest",
    "events": "ds_events.cli.log",
    "verify": "ds_events.cli.log",
    "repair": "ds_events.cli.log",
    "replay": "ds_events.cli.log",
    "store": "ds_events.cli.store",
    "reply": "ds_events.cli.interact",
    "inbox": "ds_events.cli.interact",
    "binding": "ds_events.cli.interact",
    "memory": "ds_events.cli.memory",
    "bash": "ds_events.cli.bash",
    "mcp": "ds_events.cli.mcp",
    "demo": "ds_events.cli.demo:demo",
    "serve": "ds_events.cli.serve",
    "acp": "ds_events.cli.acp",
    "run": "ds_events.cli.run",
    "doctor": "ds_events.cli.doctor",
    "config": "ds_events.cli.config",
    "audit-paper": "ds_events.cli.claims:audit_paper",
}
cli.lazy.update(COMMANDS)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``ds`` console script."""
    try:
        result = cli.main(args=argv, prog_name="ds", standalone_mode=False)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "ds"
        _fail(f"{exc.format_message()} (see `{where} --help`)", 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except click.Abort:
        _fail("aborted", 1)
    except ServiceError as exc:  # the code the daemon and the MCP tools give, then what to do
        _fail(f"{exc.code}: {exc.message}", 1)
    except EventDecodeError as exc:
        _fail(f"the log holds a line that is not a valid event ({exc}): run `ds verify QUEST`, then `ds repair QUEST`", 1)
    except DiskFull as exc:
        _fail(f"{exc.code}: {exc}", 1)
    except LogUnavailable as exc:  # the codes the daemon and the MCP tools give: log_unavailable (reason)
        reason = "" if exc.code == LogUnavailable.code else f" ({exc.code})"
        _fail(f"{LogUnavailable.code}{reason}: {exc}", 1)
    except LogError as exc:
        _fail(f"{exc}", 1)
    except PermissionError as exc:
        _fail(f"permission denied: {exc.filename}: fix its permissions or use another --home", 1)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # a file beside the log: still a full disk
            _fail(f"{DiskFull.code}: the disk is full ({exc.strerror}): {exc.filename or ''}; free some space and retry".rstrip(": "), 1)
        _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), 1)
    sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)
