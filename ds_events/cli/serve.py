"""``ds serve``: the daemon's HTTP API and live event stream (aiohttp, imported here only)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import click

from ds_events.home import Home

from .common import CliError, TurnOptions, cli, out, pass_home

__all__ = ["serve", "serve_home", "is_loopback"]


@cli.command()
@click.option("--home", "home_override", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The ds-events home (same as `ds --home`).")  # fmt: skip
@click.option("--host", default=None, help="Address to listen on (default: config serve.host, 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default: config serve.port, 8765; 0 picks a free one).")
@click.option("--token", default=None, help="Require Authorization: Bearer TOKEN (or set DS_TOKEN, or serve.token in config).")
@click.option("--runner", "-r", default=None,
              help="The agent that runs turns: codex | claude | acp | scripted (default: config runner.name).")  # fmt: skip
@click.option("--model", "-m", default=None, help="The model the agent uses (default: config runner.model).")
@click.option("--trajectory", type=click.Path(dir_okay=False), default=None, help="The scripted runner's trajectory file.")
@click.option("--no-turns", is_flag=True, help="Serve the API only: run no turns (another process hosts them).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning", show_default=True,
              help="The daemon's own log lines shown on stderr, from this level up.")  # fmt: skip
@pass_home
def serve(
    home: Home, home_override: Path | None, host: str | None, port: int | None, token: str | None,
    runner: str | None, model: str | None, trajectory: str | None, no_turns: bool, log_level: str,
) -> None:  # fmt: skip
    """Serve the HTTP API and the live event stream of every quest in the home, and run
    their turns (a queued message starts one; see `ds run`).

    Listens on loopback unless told otherwise; any other address needs a token.
    Example: ds serve --port 8765   then   curl -N localhost:8765/api/quests/Q/events?stream=1
    """
    if home_override is not None:
        home = Home(home_override)
    home.init()
    settings = home.config().serve
    host = host or settings.host
    port = settings.port if port is None else port
    token = token or os.environ.get("DS_TOKEN") or settings.token or None
    if not is_loopback(host) and not token:
        raise CliError(
            f"refusing to listen on {host} without a token: anyone who can reach it could steer your quests; "
            "pass --token T (or set DS_TOKEN, or serve.token in config.yaml), or use --host 127.0.0.1"
        )
    turns = None if no_turns else TurnOptions(runner=runner, model=model, trajectory=trajectory)
    if turns is not None and (runner or trajectory):  # refuse a bad --runner/--trajectory before listening
        from ds_events.runners import make_runner

        config = home.config().runner
        name = runner or config.name
        make_runner(name, config, **({"trajectory": trajectory} if name == "scripted" else {}))
    _log_to_stderr(log_level)
    serve_home(home, host, port, token, turns)


def serve_home(
    home: Home, host: str, port: int, token: str | None, turns: TurnOptions | None, *,
    quest_ids: list[str] | None = None, on_bound: Callable[[int], None] | None = None,
) -> None:  # fmt: skip
    """Serve ``home`` until SIGINT/SIGTERM (``turns``: host its quests' turns with these
    runner options, only ``quest_ids``' when given; None hosts none). ``on_bound`` is
    called with the port actually bound (``port`` 0 picks one) once the daemon listens."""
    asyncio.run(_run(home, host, port, token, turns, quest_ids, on_bound))


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; everything else (0.0.0.0 too) is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _log_to_stderr(level: str) -> None:
    """Our loggers (``ds_events.*``) from ``level`` up, others' from warning up, on stderr,
    each line led by its level (so a script can count the errors)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("ds_events").setLevel(level.upper())


async def _run(
    home: Home, host: str, port: int, token: str | None, turns: TurnOptions | None, quest_ids: list[str] | None,
    on_bound: Callable[[int], None] | None,
) -> None:  # fmt: skip
    from aiohttp import web

    from handlers.http import make_app
    from handlers.http.server import make_runner

    # The guard learns the port from each connection's socket (the one bound, also for
    # --port 0); the host given here is one more of the daemon's own names.
    app = make_app(home, token=token, host=host)
    runner = make_runner(app, shutdown_timeout=5.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}: pick another --port") from None
    bound = _bound_port(site)
    # One line a script (or a test) can wait for: the address actually bound.
    out(f"serving {home.root} on http://{host}:{bound}{' (token required)' if token else ''}")
    if on_bound is not None:
        on_bound(bound)
    fleet_task = None
    if turns is not None:
        from ds_events.runners.fleet import Fleet
        from handlers.http.app import running_hub

        # The scheduler works on the hub's open quests (the hub exists from the runner's
        # setup on): each is opened once, and a message posted over HTTP wakes its
        # scheduler at once (the same log handle).
        hub = running_hub(app)
        fleet = Fleet(home, opener=hub.quest, quest_ids=quest_ids, **turns)
        hub.hosts.append(fleet)  # a quest deleted over HTTP is let go of first
        fleet_task = asyncio.create_task(fleet.run())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    if fleet_task is not None:  # running agents are ended; their turns are recovered on restart
        fleet_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await fleet_task
    await runner.cleanup()  # on_shutdown ends the open streams, then cleanup_ctx stops followers
    out("stopped")


def _bound_port(site: object) -> int:
    server = getattr(site, "_server", None)
    for sock in getattr(server, "sockets", None) or []:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            return int(sock.getsockname()[1])
    return 0
