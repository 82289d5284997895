"""Fuzz every route of the daemon (read from its router: a new route is covered without a
line here) with random bodies, queries, path parameters and headers, and check what must
hold whatever a client sends:

- no answer is a 5xx;
- every refusal (4xx) is ours: JSON ``{"error": code, "message": ...}``;
- a refusal writes nothing: the quest log's last seq, the quest's files and the home's
  list of quests are as they were before the request.

Bodies: deep nesting (beyond and within the bound), lone surrogates (as JSON escapes, in
values and names, at any depth), CESU-8 and other bytes that are not UTF-8, huge and
non-finite numbers, wrong types, JSON that is not an object, binary, huge strings, and
objects built from the fields the routes take. Queries and path parameters: the
parameters the routes read with good and bad values, percent-escapes that are not
UTF-8, junk names. Headers: content types, origins (own, foreign, null), Host names,
Sec-Fetch-Site, Accept (pages and streams), Last-Event-ID, Authorization. A stream that
opens is read and closed.

The generator is seeded (``DS_FUZZ_SEED``, default fixed; ``random`` for a fresh one,
printed); ``DS_FUZZ_REQUESTS`` sets the requests per route. Run with ``-s`` for the
counts (requests per route, refusals by status).
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from typing import Any

import pytest
from yarl import URL

from ds_events.home import Home, Quest
from ds_events.services import interactions
from handlers.http import make_app
from handlers.http.body import MAX_DEPTH
from tests.mcp_support import changed, snapshot

from .conftest import DaemonTestServer
from .routes import PARAMS, every_route, fill

_SEED = os.environ.get("DS_FUZZ_SEED", "20260022")
SEED = random.randrange(1 << 32) if _SEED == "random" else int(_SEED)
PER_ROUTE = int(os.environ.get("DS_FUZZ_REQUESTS", "60"))

FIELDS = ["text", "role", "title", "id", "brief", "action", "reason", "runner", "model", "option_id", "data",
          "comment", "interaction_id", "zz_unknown"]  # fmt: skip
STRINGS = ["", " ", "x", "pause", "stop", "resume", "user", "scripted", "codex", "é漢字🙂", "\u202eevil", "a\u0000b",
           "../../etc/passwd", "%s%n", "<script>alert(1)</script>", "x" * 3000, "q1", "ia-00000000"]  # fmt: skip
QUERY_NAMES = ["after", "before", "limit", "tail", "types", "format", "stream", "kind", "scope", "q", "view", "commits",
               "include_ended", "zz"]  # fmt: skip
QUERY_VALUES = ["0", "1", "2", "-1", "99999999999", "9" * 40, "abc", "", "1.5", "true", "false", "json", "svg", "acp",
                "raw", "branch", "stage", "event", "quest", "global", "both", "conversation.message", "a,,b", "knowledge",
                "%ED%A0%80", "%FF", "%C0%80", "%E2%82", "%00", "%25", "é", "x" * 1500]  # fmt: skip
PATH_VALUES = ["nope", "%ED%A0%80", "q1%FF", "..", "%2E%2E", "a%2Fb", "%00", "x" * 300, "é", "main", "HEAD", "idea-0001",
               "knowledge-00000000", "ia-00000000", "bx-00000000", "app.js", "index.html", "../app.py"]  # fmt: skip
CONTENT_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "application/octet-stream", "application/json; charset=latin-1", "", "application/json\u00e9"]  # fmt: skip
ACCEPTS = ["application/json", "text/event-stream", "application/x-ndjson", "*/*", "text/html", "é"]


# Bodies each writing route accepts (by the end of its path), so that a good share of
# the requests write and the later ones meet a changed quest.
GOOD = {
    "/api/quests": lambda r: {"title": r.choice(STRINGS[2:]) or "t", **({"brief": r.choice(STRINGS)} if r.random() < 0.5 else {})},
    "/messages": lambda r: {"text": r.choice(STRINGS), **({"role": r.choice(["user", "assistant", "robot"])} if r.random() < 0.3 else {})},
    "/control": lambda r: {"action": r.choice(["pause", "stop", "resume", "explode"]), "reason": r.choice(STRINGS)},
    "/runner": lambda r: {"runner": r.choice(["", "scripted", "codex", "nope"]), "model": r.choice(STRINGS)},
    "/reply": lambda r: {"text": r.choice(STRINGS), "option_id": r.choice([None, "a", "b", "zz"])},
}


class Fuzzer:
    def __init__(self, rng: random.Random, port: int) -> None:
        self.rng, self.port = rng, port

    def request(self, method: str, template: str) -> tuple[str, dict[str, str], bytes | None]:
        r = self.rng
        values = {name: r.choice(PATH_VALUES) for name in PARAMS if r.random() < 0.15}
        if r.random() < 0.9:
            values["quest_id"] = "q1"
        path = fill(template, values)
        if r.random() < 0.7:
            pairs = [f"{r.choice(QUERY_NAMES)}={r.choice(QUERY_VALUES)}" for _ in range(r.randrange(1, 5))]
            if r.random() < 0.1:
                pairs.append(r.choice(["%FF=1", "=", "&&", "a=b=c", "%ED%A0%80"]))
            path += "?" + "&".join(pairs)
        if method == "GET":
            return path, self.headers(method), None
        good = next((make for end, make in GOOD.items() if template.endswith(end)), None)
        body = json.dumps(good(r)).encode() if good is not None and r.random() < 0.35 else self.body()
        return path, self.headers(method), body

    def headers(self, method: str) -> dict[str, str]:
        r, h = self.rng, {}
        if method != "GET":
            h["Content-Type"] = "application/json" if r.random() < 0.8 else r.choice(CONTENT_TYPES)
        if r.random() < 0.15:
            h["Origin"] = r.choice(["http://evil.example", "null", f"http://127.0.0.1:{self.port}", f"http://localhost:{self.port}", "x"])
        if r.random() < 0.05:
            h["Host"] = r.choice([f"rebind.evil.example:{self.port}", f"localhost:{self.port}", "127.0.0.1:1", "[::1"])
        if r.random() < 0.1:
            h["Sec-Fetch-Site"] = r.choice(["cross-site", "same-site", "same-origin", "none", "junk"])
        if r.random() < 0.3:
            h["Accept"] = r.choice(ACCEPTS)
        if r.random() < 0.2:
            h["Last-Event-ID"] = r.choice(["0", "1", "-1", "99999999999", "abc", "", "1e3", "9" * 50])
        if r.random() < 0.05:
            h["Authorization"] = r.choice(["Bearer x", "Basic Zm9v", "é", ""])
        return h

    def body(self) -> bytes | None:
        r = self.rng
        kind = r.choice(["object", "object", "object", "deep", "deep_ok", "surrogate", "surrogate_name", "not_utf8",
                         "number", "not_object", "binary", "huge", "empty", "none"])  # fmt: skip
        if kind == "object":
            return json.dumps({r.choice(FIELDS): self.value(3) for _ in range(r.randrange(0, 4))}).encode()
        if kind == "deep":
            n = r.choice([MAX_DEPTH + 1, 1000, 100_000])
            opener, closer = r.choice([(b"[", b"]"), (b'{"a":', b"}")])
            return opener * n + (b"1" if opener != b"[" else b"") + closer * (n if r.random() < 0.8 else 0)
        if kind == "deep_ok":
            n = MAX_DEPTH - 1
            return b'{"comment": ' + b"[" * n + b"]" * n + b', "text": "deep"}'
        if kind == "surrogate":
            where = r.choice(FIELDS[:-1])
            return f'{{"{where}": "{r.choice(["a", ""])}\\u{r.randrange(0xD800, 0xE000):04x}{r.choice(["b", ""])}"}}'.encode()
        if kind == "surrogate_name":
            return b'{"comment": {"k\\udc80": [1, {"\\ud9ff": 2}]}, "text": "x"}'
        if kind == "not_utf8":
            return r.choice([b'{"text": "\xed\xa0\x80"}', b'{"text": "\xff"}', b"\xfe\xff\x00{\x00}", b'{"text": "\xc0\x80"}'])
        if kind == "number":
            return r.choice([b'{"text": 1e999}', b'{"text": NaN}', b'{"limit": -Infinity}', b'{"text": 1' + b"0" * 5000 + b"}",
                             b'{"data": {"n": 123456789012345678901234567890}, "text": "n"}', b'{"text": -0.0}'])  # fmt: skip
        if kind == "not_object":
            return r.choice([b"[]", b'"text"', b"42", b"null", b"true", b"[{}]"])
        if kind == "binary":
            return bytes(r.randrange(256) for _ in range(r.randrange(1, 64)))
        if kind == "huge":
            return json.dumps({"text": "y" * r.choice([90_000, 100_001, 900_000])}).encode()
        if kind == "empty":
            return b""
        return None

    def value(self, depth: int) -> Any:
        r = self.rng
        kind = r.choice(["str", "str", "str", "int", "float", "bool", "null", "list", "dict"] if depth else ["str", "int"])
        if kind == "str":
            return r.choice(STRINGS)
        if kind == "int":
            return r.choice([0, -1, 1, 2**63, -(2**64), 10**30])
        if kind == "float":
            return r.choice([0.5, -1e308, 1e-300])
        if kind == "bool":
            return r.random() < 0.5
        if kind == "null":
            return None
        if kind == "list":
            return [self.value(depth - 1) for _ in range(r.randrange(0, 3))]
        return {r.choice([*FIELDS, "k", "é"]): self.value(depth - 1) for _ in range(r.randrange(0, 3))}


def _state(home: Home, quest: Quest) -> tuple[int, list[str], dict[str, Any]]:
    return quest.log.last_seq, home.quest_ids(), snapshot(quest.root)


@pytest.fixture(autouse=True)
def _doctor_stays_on_the_machine(home: Home) -> None:
    """GET /api/doctor asks the runner's provider endpoint: here a loopback port nothing
    listens on (refused at once), never a host outside the machine."""
    home.config_path.write_text(home.config_path.read_text() + "runner:\n  codex_provider:\n    base_url: http://127.0.0.1:9/v1\n")


@pytest.mark.timeout(900)
async def test_no_route_answers_5xx_and_no_refusal_writes_anything(aiohttp_client: Any, home: Home, quest: Quest) -> None:
    app = make_app(home)
    routes = every_route(app)
    client = await aiohttp_client(DaemonTestServer(app))
    rng = random.Random(SEED)
    # A request waiting for the user's reply (the id the reply route's path takes).
    interactions.interact(quest, interactions.Interact(
        kind="decision_request", message="Which?", reply_mode="blocking", interaction_id=PARAMS["iid"],
        options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
    ))  # fmt: skip
    print(f"\nDS_FUZZ_SEED={SEED} ({PER_ROUTE} requests per route, {len(routes)} routes)")
    # Open what lazily opens (the quest's views, its memory index) before the first snapshot.
    for method, template in routes:
        if method == "GET":
            async with client.get(fill(template), headers={"Accept": "application/json"}) as resp:
                await resp.read()
    fuzz = Fuzzer(rng, client.server.port)
    counts: dict[str, Counter[int]] = {}
    failures: list[str] = []
    state = _state(home, quest)
    for _ in range(PER_ROUTE):
        for method, template in routes:
            path, headers, body = fuzz.request(method, template)
            status, problem = await _send(client, method, path, headers, body)
            counts.setdefault(f"{method} {template}", Counter())[status] += 1
            if problem is None and status >= 400:
                after = _state(home, quest)
                if after != state:
                    problem = f"a refusal wrote: seq {state[0]} -> {after[0]}, quests {state[1]} -> {after[1]}, files {changed(state[2], after[2])}"
            if problem is not None:
                failures.append(f"{method} {path} headers={headers} body={(body or b'')[:120]!r}: {problem}")
            if status < 400:
                state = _state(home, quest)
    _print_counts(counts)
    assert failures == [], "\n".join(failures[:20])
    assert sum(sum(c.values()) for c in counts.values()) == PER_ROUTE * len(routes)


async def _send(client: Any, method: str, path: str, headers: dict[str, str], body: bytes | None) -> tuple[int, str | None]:
    """(status, what is wrong with the answer or None)."""
    async with client.request(method, URL(path, encoded=True), headers=headers, data=body,
                              skip_auto_headers=["Content-Type"]) as resp:  # fmt: skip
        ctype = resp.headers.get("Content-Type", "")
        if resp.status == 200 and ("event-stream" in ctype or "ndjson" in ctype):
            await resp.content.readline()  # it streams: one line, then the client goes away
            return resp.status, None
        raw = await resp.read()
    if resp.status >= 500:
        return resp.status, f"a {resp.status}: {raw[:300]!r}"
    if resp.status >= 400:
        try:
            answer = json.loads(raw)
        except ValueError:
            return resp.status, f"a refusal that is not JSON ({ctype}): {raw[:200]!r}"
        if not (isinstance(answer, dict) and isinstance(answer.get("error"), str) and answer.get("message")):
            return resp.status, f"a refusal not in our shape: {answer!r:.300}"
    return resp.status, None


def _print_counts(counts: dict[str, Counter[int]]) -> None:
    total = Counter[int]()
    for route, by_status in sorted(counts.items()):
        total.update(by_status)
        refused = sum(n for s, n in by_status.items() if s >= 400)
        print(f"{route:58} {sum(by_status.values()):4} requests, {refused:4} refused  {dict(sorted(by_status.items()))}")
    refused = sum(n for s, n in total.items() if s >= 400)
    fives = sum(n for s, n in total.items() if s >= 500)
    print(f"{'all routes':58} {sum(total.values()):4} requests, {refused:4} refused, {fives} 5xx  {dict(sorted(total.items()))}")

