"""Reading a 100 MB session log through MCP holds only what it returns in memory."""

from __future__ import annotations

import tracemalloc

import pytest

from ds_events.bash.linelog import format_lines

from .support import call, client_for

TARGET_BYTES = 100 * 1024 * 1024
PAD = "x" * 90


def write_big_log(path, target=TARGET_BYTES) -> int:
    """A numbered log of about ``target`` bytes, written in large blocks; returns its line count."""
    seq, size = 0, 0
    with open(path, "wb") as f:
        while size < target:
            block = format_lines([(seq + i, f"line {seq + i} {PAD}") for i in range(1, 20001)])
            f.write(block)
            seq, size = seq + 20000, size + len(block)
    return seq


@pytest.mark.slow
async def test_reading_the_tail_of_a_100_mb_log_keeps_memory_bounded(quest):
    async with client_for(quest) as c:
        done = await call(c, command="echo small", mode="await", wait_timeout_seconds=20)
        path = quest.root / done["session"]["log_path"]
        try:
            total = write_big_log(path)
            assert path.stat().st_size >= TARGET_BYTES
            results = {}
            for name, args in {
                "tail": {"tail": 200},
                "preview": {},
                "middle": {"after_seq": total // 2, "limit": 200},
                "before": {"before_seq": total // 3, "limit": 200},
            }.items():
                tracemalloc.start()
                try:
                    results[name] = await call(c, mode="read", id=done["id"], **args)
                    _, peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
                assert peak < 8 * 1024 * 1024, (name, peak)  # the file is 100 MB
        finally:
            path.unlink()
    tail = results["tail"]
    assert tail["log_line_count"] == total and (tail["first_seq"], tail["last_seq"]) == (total - 199, total)
    assert tail["log"].splitlines()[-1] == f"line {total} {PAD}"
    preview = results["preview"]  # DeepScientist's preview: the first 500 and the last 1500 lines
    assert preview["omitted"] == [501, total - 1500] and preview["log_preview_omitted_lines"] == total - 2000
    assert (preview["log_preview_head_lines"], preview["log_preview_tail_lines"]) == (500, 1500)
    assert results["middle"]["first_seq"] == total // 2 + 1
    assert results["middle"]["tail"][0] == {"seq": total // 2 + 1, "line": f"line {total // 2 + 1} {PAD}"}
    assert results["before"]["last_seq"] == total // 3 - 1 and results["before"]["first_seq"] == total // 3 - 200
