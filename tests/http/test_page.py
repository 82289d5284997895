"""The web page's files: served at ``/`` and ``/static/<name>`` as package data, with the
types a browser needs for ES modules, without a token (the ``/api`` routes keep theirs),
and never a file outside ``static/``."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.http.page import STATIC_DIR


async def test_the_page_and_its_modules_are_served_with_their_types(client: Any) -> None:
    resp = await client.get("/")
    assert resp.status == 200
    assert resp.content_type == "text/html"
    html = await resp.text()
    assert '<script type="module" src="/static/app.js">' in html
    for name, kind in [("app.js", "text/javascript"), ("api.js", "text/javascript"), ("style.css", "text/css")]:
        resp = await client.get(f"/static/{name}")
        assert resp.status == 200, name
        assert resp.content_type == kind
        assert await resp.read() == (STATIC_DIR / name).read_bytes()
        assert "default-src 'self'" in resp.headers["Content-Security-Policy"]


async def test_every_module_the_page_imports_is_served(client: Any) -> None:
    import re

    for path in STATIC_DIR.glob("*.js"):
        for name in re.findall(r'from "\./([\w.-]+)"', path.read_text()):
            resp = await client.get(f"/static/{name}")
            assert resp.status == 200, f"{path.name} imports {name}, which is not served"


@pytest.mark.parametrize("path", ["/static/nope.js", "/static/..%2Fpage.py", "/static/%2E%2E%2Fapp.py", "/static/"])
async def test_a_name_outside_the_static_files_is_a_structured_404(client: Any, path: str) -> None:
    resp = await client.get(path)
    assert resp.status == 404
    assert (await resp.json())["error"] == "not_found"


async def test_with_a_token_the_page_loads_without_it_and_the_api_still_needs_it(make_client: Any) -> None:
    client = await make_client(token="s3cret")
    assert (await client.get("/")).status == 200
    assert (await client.get("/static/app.js")).status == 200
    refused = await client.get("/api/quests")
    assert refused.status == 401
    assert (await refused.json())["error"] == "unauthorized"
    assert (await client.post("/", json={})).status == 401  # only reading the page is open
    assert (await client.get("/api/quests", headers={"Authorization": "Bearer s3cret"})).status == 200


async def test_the_quest_list_row_carries_last_activity_and_open_requests(client: Any) -> None:
    body = await (await client.get("/api/quests")).json()
    (row,) = body["quests"]
    assert row["quest_id"] == "q1"
    assert row["open_requests"] == 0
    assert row["updated_at"].endswith(("Z", "+00:00"))


def test_every_static_file_is_package_data_so_an_installed_daemon_serves_it() -> None:
    import fnmatch
    import tomllib

    pyproject = tomllib.loads((STATIC_DIR.parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["handlers.http"]
    for path in STATIC_DIR.iterdir():
        rel = f"static/{path.name}"
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), f"{rel} would be left out of the wheel: add its pattern to package-data"
