"""`ds serve` as a real process: an MCP server process and `ds message` append, an SSE
client sees their events live and in order; SIGTERM ends the stream cleanly; a
non-loopback address without a token is refused."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import mcp
import pytest

from ds_events.home import Home, Quest

from ..helpers import DS, ds_env, start_serve
from .sse import frames


@pytest.mark.slow
async def test_events_from_an_mcp_process_and_ds_message_reach_an_sse_client_live_in_order(home: Home, quest: Quest, tmp_path: Path) -> None:
    start = quest.log.last_seq
    proc, port = start_serve(home, "--no-turns", log=tmp_path / "serve.log")  # the stream, not turns: the message must start none
    try:
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{port}/api/quests/q1/events?stream=1&after={start}"
            async with session.get(url) as resp:
                assert resp.status == 200
                params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "ds_events", "mcp", "--namespace", "memory"], env=ds_env(home, DS_QUEST_ID="q1"))
                async with mcp.Client(params) as c:
                    written = await c.call_tool("write", {"kind": "knowledge", "title": "Warmup avoids early divergence", "body": "500 steps."})
                    assert not written.is_error
                done = await asyncio.to_thread(subprocess.run, [*DS, "message", "q1", "from the cli", "--json"], env=ds_env(home), capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr
                message_seq = json.loads(done.stdout)["seq"]
                seen = []
                async for f in frames(resp, timeout=30):
                    seen.append(f)
                    if int(f["id"]) == message_seq:
                        break
        seqs = [int(f["id"]) for f in seen]
        assert seqs == list(range(start + 1, message_seq + 1))  # every event, in order, no gap
        types = [f["data"]["type"] for f in seen]
        assert "memory.card_written" in types
        assert types[-1] == "conversation.message" and seen[-1]["data"]["content"] == "from the cli"
        assert [e.seq for e in quest.log.read(start)] == seqs
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
async def test_sigterm_ends_an_open_stream_cleanly_and_exits_zero(home: Home, quest: Quest, tmp_path: Path) -> None:
    proc, port = start_serve(home, log=tmp_path / "serve.log")
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/api/quests/q1/events?stream=1") as resp:
                first = await frames(resp).__anext__()
                assert first["id"] == "1"
                proc.send_signal(signal.SIGTERM)
                rest = [f async for f in frames(resp, timeout=30)]
        assert rest[-1]["event"] == "end"
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_binding_beyond_loopback_without_a_token_is_refused(home: Home) -> None:
    done = subprocess.run([*DS, "serve", "--host", "0.0.0.0", "--port", "0"], env=ds_env(home, DS_TOKEN=""), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("error: refusing to listen on 0.0.0.0 without a token")


def test_a_token_from_the_environment_allows_a_non_loopback_address_and_is_required(home: Home) -> None:
    import json
    import urllib.error
    import urllib.request

    proc = subprocess.Popen([*DS, "serve", "--host", "0.0.0.0", "--port", "0"], env=ds_env(home, DS_TOKEN="t0k"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "token required" in line, line
        port = int(line.rsplit(":", 1)[1].split()[0])
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=30)
        assert refused.value.code == 401 and json.loads(refused.value.read())["error"] == "unauthorized"
        refused.value.close()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/health", headers={"Authorization": "Bearer t0k"})
        with urllib.request.urlopen(req, timeout=30) as ok:
            assert json.loads(ok.read())["status"] == "ok"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_host_and_token_may_come_from_config_yaml(home: Home) -> None:
    home.config_path.write_text("serve:\n  host: 0.0.0.0\n  port: 0\n  token: from-config\n")
    proc = subprocess.Popen([*DS, "serve"], env=ds_env(home, DS_TOKEN=""), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("serving") and "http://0.0.0.0:" in line and "token required" in line, line
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
