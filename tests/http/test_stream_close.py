"""A client that goes away from a live stream is not an error (issue 24 part 8: "every
closed browser tab logs a ClientConnectionResetError traceback"): against a real ``ds
serve``, SSE and NDJSON streams closed politely (FIN) and abruptly (RST), idle and while
events are being written to them, leave no traceback and no error line in the daemon's
log, and the daemon keeps serving."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import urllib.request
from pathlib import Path

from ds_events.home import Home
from tests.helpers import DS, ds_env, start_serve, wait_until


def _open_stream(port: int, quest_id: str, accept: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    request = (
        f"GET /api/quests/{quest_id}/events?after=0 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\n\r\n"
    )
    sock.sendall(request.encode())
    got = b""
    while b"\r\n\r\n" not in got or len(got.split(b"\r\n\r\n", 1)[1]) == 0:  # the headers and a first frame
        chunk = sock.recv(65536)
        assert chunk, got
        got += chunk
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    return sock


def _close(sock: socket.socket, abrupt: bool) -> None:
    if abrupt:  # SO_LINGER 0: the close sends a RST, as a killed tab's connection may
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _message(home: Home, quest_id: str, text: str) -> int:
    done = subprocess.run([*DS, "message", quest_id, text, "--json"], env=ds_env(home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["seq"])


def test_streams_closed_by_their_clients_end_quietly_in_the_daemons_log(home: Home, tmp_path: Path) -> None:
    with home.create_quest("Streams", quest_id="sq"):
        pass
    log = tmp_path / "serve.log"
    proc, port = start_serve(home, "--no-turns", log=log)
    try:
        for round_ in range(3):
            streams = [
                (_open_stream(port, "sq", accept), abrupt)
                for accept in ("text/event-stream", "application/x-ndjson")
                for abrupt in (False, True)
            ]
            # Half closed while idle, then an event is written to the rest, which close
            # with frames in flight; then more events for handlers that may not know yet.
            for sock, abrupt in streams[:2]:
                _close(sock, abrupt)
            _message(home, "sq", f"round {round_} a")
            for sock, abrupt in streams[2:]:
                _close(sock, abrupt)
            last = _message(home, "sq", f"round {round_} b")
        # Still serving, and it saw every event: a fresh stream reads up to the last one.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/quests/sq/events?after={last - 1}", timeout=30) as resp:
            assert [e["seq"] for e in json.loads(resp.read())["events"]] == [last]
        wait_until(lambda: "round 2 b" in (home.quest_root("sq") / ".ds" / "events.jsonl").read_text(), what="the last message")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = log.read_text()
    assert "Traceback" not in text, text
    assert "ClientConnectionResetError" not in text and "ConnectionResetError" not in text, text
    assert "Error handling request" not in text and "unhandled error" not in text, text
