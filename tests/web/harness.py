"""The browser-test harness, as plain functions (``conftest.py`` turns them into
fixtures; ``python3 -m tests.web.screenshot`` uses them to re-make the README picture).

- :func:`build_demo`: a home holding the demo quest, made by ``ds demo`` itself (the
  scripted agent through the real scheduler and MCP servers) in a subprocess.
- :func:`serve`: a real ``ds serve`` subprocess on a free loopback port over a home,
  optionally with a token; yields a :class:`Server` (its URL, and ``api()`` to call it).
- :func:`launch`: playwright driving Debian's ``/usr/bin/chromium`` (never playwright's
  own browser download), with the flags this machine needs.
- :class:`Guard`: listens to a page and collects what must fail a test: any HTTP 5xx the
  page received, any uncaught page error, any console error (a 4xx from an ``/api``
  route is the daemon refusing bad input, which the page shows; the browser's own
  "Failed to load resource" line for it is not a page bug).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ds_events.home import Home

from ..helpers import DS, ds_env, start_serve

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "OUTPUT", "Server", "Guard", "build_demo", "serve", "launch", "screenshot_path"]

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output" / "web"  # screenshots (gitignored); look at them
CHROMIUM = os.environ.get("DS_CHROMIUM", "/usr/bin/chromium")
# Without the networking flags Chromium's own background connections (updates, sync,
# QUIC probes) are refused here in a burst and slow every page down.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip


@dataclass
class Server:
    """A running ``ds serve``: ``url`` (no trailing slash), its home, the token (or None)."""

    url: str
    home: Home
    token: str | None
    proc: subprocess.Popen[bytes]
    log: Path

    def api(self, path: str, method: str = "GET", body: Any = None, *, token: str | None = "default") -> tuple[int, Any]:
        """(status, parsed JSON) of a daemon route, with the server's token unless told."""
        tok = self.token if token == "default" else token
        headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {tok}"} if tok else {})
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            with err:
                return err.code, json.loads(err.read() or b"null")

    def page_url(self, fragment: str = "/") -> str:
        return f"{self.url}/#{fragment}"


@dataclass
class Guard:
    """What a page did that must fail the test (see the module docstring)."""

    problems: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on("response", self._response)
        page.on("pageerror", lambda exc: self.problems.append(f"uncaught page error: {exc}"))
        page.on("console", self._console)

    def _response(self, response: Any) -> None:
        if response.status >= 500:
            self.problems.append(f"HTTP {response.status} for {response.request.method} {response.url}")

    def _console(self, msg: Any) -> None:
        if msg.type != "error":
            return
        url = (msg.location or {}).get("url", "")
        refused = msg.text.startswith("Failed to load resource: the server responded with a status of 4")
        if refused and urllib.parse.urlsplit(url).path.startswith("/api/"):
            return
        self.problems.append(f"console error: {msg.text} ({url})")

    def check(self) -> None:
        assert not self.problems, "the page misbehaved:\n" + "\n".join(self.problems)


def build_demo(root: Path) -> tuple[Home, str]:
    """``ds demo --home root``: the demo quest, its turns run by the scripted agent.
    Returns the home and the quest id."""
    home = Home(root)
    done = subprocess.run([*DS, "demo", "--home", str(root)], env=ds_env(home, DS_TOKEN=""), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"ds demo failed:\n{done.stdout}\n{done.stderr}"
    (quest_id,) = home.quest_ids()
    return home, quest_id


@contextlib.contextmanager
def serve(home: Home, *extra: str, token: str | None = None, log: Path) -> Iterator[Server]:
    """A ``ds serve`` subprocess over ``home`` (``extra``: more flags, e.g. ``--no-turns``)."""
    args = [*extra, *(["--token", token] if token else [])]
    proc, port = start_serve(home, *args, log=log)
    try:
        yield Server(url=f"http://127.0.0.1:{port}", home=home, token=token, proc=proc, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def launch() -> Iterator[Any]:
    """A headless Chromium (Debian's) under playwright; yields the browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def screenshot_path(name: str) -> Path:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return OUTPUT / f"{safe}.png"

