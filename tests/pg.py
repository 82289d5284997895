"""A throw-away PostgreSQL cluster for the tests (registered in tests/conftest.py).

``pg_dsn`` (session): starts Debian's PostgreSQL 15 (``initdb`` + ``pg_ctl`` from
/usr/lib/postgresql/15/bin, installed by fixtures/system_deps.sh) in a temporary
directory, on a free loopback port, trust authentication, and stops it when the session
ends. The server refuses to run as root, so under root it runs as the ``postgres``
system user (created by Debian's package; ``nobody`` where there is none) through
``runuser``, in a directory chowned to it. Nothing listens beyond 127.0.0.1.

``pg_database`` (per test): a fresh, empty database on that cluster, its DSN, dropped
after the test, so tests never see each other's quests. ``fresh_database(dsn)`` makes
one outside a fixture.

``pg_cluster`` (per test): a cluster of the test's own (a second initdb, about a second),
for a test that stops its server and starts it again (``stop_server`` /
``start_server``, same port and data): the session's must stay up for every other test.

A machine without the binaries fails these tests (rather than skipping them): run
``fixtures/system_deps.sh``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["pg_dsn", "pg_database", "pg_cluster", "Cluster", "fresh_database", "drop_database", "free_port", "PG_BIN"]

PG_BIN = Path(os.environ.get("DS_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
_SUPERUSER = "ds"


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The DSN of a PostgreSQL cluster started for this test session (database ``postgres``)."""
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster.dsn("postgres")
    finally:
        cluster.stop()


@pytest.fixture
def pg_cluster() -> Iterator[Cluster]:
    """A running cluster of this test's own, removed after it (whatever state it left the server in)."""
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_database(pg_dsn: str) -> Iterator[str]:
    """The DSN of a fresh, empty database, dropped after the test."""
    dsn = fresh_database(pg_dsn)
    try:
        yield dsn
    finally:
        drop_database(pg_dsn, dsn)


def fresh_database(admin_dsn: str) -> str:
    """Create an empty database on the cluster of ``admin_dsn``; return its DSN."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    return make_conninfo(**{**conninfo_to_dict(admin_dsn), "dbname": name})


def drop_database(admin_dsn: str, dsn: str) -> None:
    """Drop the database ``dsn`` names, ending any session still connected to it."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    name = conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Cluster:
    """One initdb'd data directory and the server running on it."""

    def __init__(self) -> None:
        missing = [b for b in ("initdb", "pg_ctl", "postgres") if not (PG_BIN / b).exists()]
        if missing:
            pytest.fail(f"PostgreSQL binaries {missing} not in {PG_BIN}: run fixtures/system_deps.sh", pytrace=False)
        self.root = Path(tempfile.mkdtemp(prefix="ds-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self.started = False
        # The server refuses to run as root: become the postgres system user for it
        # (Debian's package creates it), or nobody where there is none.
        self.user = _server_user() if os.geteuid() == 0 else None
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            os.chmod(self.root, 0o700)

    def dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={_SUPERUSER} dbname={dbname}"

    def start(self) -> None:
        """initdb, then start the server on a free loopback port."""
        self._run("initdb", "-D", str(self.data), "-U", _SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync")
        # A port free now may be taken before the server binds it: try a few.
        for _attempt in range(5):
            self.port = free_port()
            result = self._pg_ctl_start()
            if result.returncode == 0:
                self.started = True
                return
        log = (self.root / "server.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the test PostgreSQL server did not start: {result.stdout}{result.stderr}\n{log}")

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server, keeping its data: ``fast`` ends every session at once (as an
        administrator's restart does), ``immediate`` as a crash would."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")
        self.started = False

    def start_server(self) -> None:
        """Start the stopped server again, on the same port with the same data."""
        result = self._pg_ctl_start()
        if result.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the test PostgreSQL server did not start again: {result.stdout}{result.stderr}\n{log}")
        self.started = True

    def stop(self) -> None:
        """Stop the server (if it runs) and remove the cluster."""
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _pg_ctl_start(self) -> subprocess.CompletedProcess[str]:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=200"
        return self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60", "-o", options, "start",
            check=False,
        )  # fmt: skip

    def _run(self, binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(PG_BIN / binary), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.root, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {result.stdout}{result.stderr}")
        return result


def _server_user() -> str:
    try:
        return pwd.getpwnam("postgres").pw_name
    except KeyError:
        return "nobody"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
