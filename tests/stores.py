"""Homes on either store: the same tests run against the file log and PostgreSQL.

``home`` here overrides the conftest's for a module that imports it: parametrised
``file`` / ``postgresql``, the latter a home whose ``config.yaml`` says ``store:`` a
fresh database of the test cluster (tests/pg.py), so every process the test starts
(``ds``, MCP servers, helper scripts) opens the quest's log there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from ds_events.home import Home
from ds_events.stores import close_pool

__all__ = ["home", "pg_url", "use_store"]


def pg_url(dsn: str) -> str:
    """The ``postgresql://`` URL of a libpq ``key=value`` DSN (what ``store:`` takes)."""
    from psycopg.conninfo import conninfo_to_dict

    d = conninfo_to_dict(dsn)
    return f"postgresql://{d['user']}@{d['host']}:{d['port']}/{d['dbname']}"


def use_store(home: Home, url: str) -> Home:
    """Point ``home`` (initialised) at the store ``url`` in its config.yaml."""
    config: dict[str, Any] = yaml.safe_load(home.config_path.read_text()) or {}
    config["store"] = url
    home.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return home


@pytest.fixture(params=["file", "postgresql"])
def home(request: pytest.FixtureRequest, home: Home) -> Iterator[Home]:
    if request.param == "file":
        yield home
        return
    url = pg_url(request.getfixturevalue("pg_database"))
    use_store(home, url)
    try:
        yield home
    finally:
        close_pool(url)  # this process's connections to a database the test drops
