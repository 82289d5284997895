"""The edge of the world for ``ds doctor``'s tests: fake agent CLIs (scripts that print a
version, as the real ones answer ``--version``), a provider endpoint on loopback that
answers every request 401 (a real provider without a key), a port nothing listens on,
and an HTTP proxy on loopback. No test reaches a host outside the machine."""

from __future__ import annotations

import http.server
import os
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ds_events.home import Home
from tests.helpers import DS, ds_env

__all__ = ["fake_cli", "Endpoint", "endpoint", "closed_port", "doctor_env", "write_config", "ACP_AGENT", "REPO", "run_doctor_json"]

REPO = Path(__file__).resolve().parents[2]
ACP_AGENT = [sys.executable, str(REPO / "fixtures" / "acp_agent.py")]
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy")


def fake_cli(bindir: Path, name: str, version_line: str) -> Path:
    """An executable ``bindir/name`` that prints ``version_line`` for ``--version``."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "{version_line}"; exit 0; fi\nexit 2\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@dataclass
class Endpoint:
    port: int
    requests: list[str] = field(default_factory=list)  # the request lines it was sent

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def endpoint() -> Iterator[Endpoint]:
    """A loopback HTTP server answering 401 to everything (a proxy too: it records the
    absolute URL a proxied request names)."""
    seen = Endpoint(port=0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.requests.append(self.requestline)
            body = b'{"error": "missing api key"}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    seen.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(home: Home, runner: dict[str, Any], **sections: Any) -> None:
    document = yaml.safe_load(home.config_path.read_text()) or {}
    document["runner"] = runner
    document.update(sections)
    home.config_path.write_text(yaml.safe_dump(document, sort_keys=False))


def doctor_env(home: Home, bindir: Path, scratch_tmp: Path, **extra: str) -> dict[str, str]:
    """``ds``'s environment for a doctor run: ``bindir`` first on PATH, no proxy variable
    of the machine's (unless ``extra`` sets one), temporary files under ``scratch_tmp``."""
    env = ds_env(home)
    for name in (*_PROXY_VARS, "DS_STORE"):
        env.pop(name, None)
    env.update(extra)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    scratch_tmp.mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(scratch_tmp)
    return env


def run_doctor_json(env: dict[str, str], *extra: str) -> tuple[int, dict[str, Any], dict[str, dict[str, Any]]]:
    """``ds doctor --json`` as a subprocess: exit code, the report, its checks by name."""
    import json
    import subprocess

    done = subprocess.run([*DS, "doctor", "--json", *extra], env=env, capture_output=True, text=True, timeout=600)
    assert done.stdout.strip(), done.stderr
    report = json.loads(done.stdout)
    return done.returncode, report, {c["name"]: c for c in report["checks"]}
