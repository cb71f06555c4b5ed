"""A real PostgreSQL server for the tests: its own cluster in a temporary folder, socket only.

``initdb`` refuses root, so the cluster belongs to the ``postgres`` system user
(Debian's ``postgresql`` package makes it; ``./run tests`` installs that). The
server listens on a unix socket in the cluster's folder, never on TCP, and is
stopped and its folder removed when the context ends, also after a failure.
Every role logs in without a password (trust), but those :meth:`Postgres.password_user`
makes: they log in only with their password (SCRAM), as a lab's users do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.own import untagged_env

#: the newest PostgreSQL Debian installed (./run tests installs its postgresql package)
BIN = max(
    Path("/usr/lib/postgresql").glob("*/bin"),
    key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    default=Path("/usr/lib/postgresql/15/bin"),
)
OWNER = "postgres"
TIMEOUT_S = 60.0
#: the group of the roles that log in with a password (pg_hba.conf: SCRAM for its members)
PASSWORD_GROUP = "password_users"


def available() -> str | None:
    """None when a server can be started here, else why not (a skip reason)."""
    if not (BIN / "initdb").exists() and shutil.which("initdb") is None:
        return "PostgreSQL is not installed (./run tests installs Debian's postgresql package)"
    try:
        import pwd  # noqa: PLC0415

        pwd.getpwnam(OWNER)
    except KeyError:
        return f"no {OWNER!r} user to run PostgreSQL as (initdb refuses root)"
    if os.geteuid() != 0:
        return "starting PostgreSQL as the postgres user needs root"
    return None


def _tool(name: str) -> str:
    return str(BIN / name) if (BIN / name).exists() else name


def _as_owner(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", OWNER, "--", *argv],
        check=check,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=untagged_env(),  # the server outlives the test that started it: not its process
    )


@dataclass(frozen=True)
class Postgres:
    """A running cluster: its data folder and the socket folder clients reach it through."""

    folder: Path

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def socket(self) -> Path:
        return self.folder

    def url(self, database: str = "postgres") -> str:
        """A libpq URL to *database* through the socket (no TCP, no password: trust)."""
        return f"postgresql://{OWNER}@/{database}?host={self.socket}"

    def create_database(self, name: str) -> str:
        _as_owner([_tool("createdb"), "-h", str(self.socket), name])
        return self.url(name)

    def password_user(self, name: str, password: str) -> str:
        """A role that logs in only with *password*, owning a new database of its name.

        The URL to that database as that role, without the password (the test gives it).
        """
        sql = (
            f"DO $$BEGIN CREATE ROLE {PASSWORD_GROUP} NOLOGIN;"
            " EXCEPTION WHEN duplicate_object THEN NULL; END$$",
            f"CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE {PASSWORD_GROUP}",
            f"CREATE DATABASE {name} OWNER {name}",
        )
        psql = [_tool("psql"), "-h", str(self.socket), "-d", "postgres", "-v", "ON_ERROR_STOP=1"]
        _as_owner([*psql, *(arg for statement in sql for arg in ("-c", statement))])
        return f"postgresql://{name}@/{name}?host={self.socket}"

    def start(self) -> None:
        options = f"-k {self.socket} -c listen_addresses='' -c fsync=on"
        log = str(self.folder / "server.log")
        _as_owner([_tool("pg_ctl"), "-D", str(self.data), "-o", options, "-l", log, "-w", "start"])

    def stop(self, mode: str = "fast") -> None:
        _as_owner([_tool("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"], check=False)


@contextlib.contextmanager
def local_postgres() -> Iterator[Postgres]:
    """A new cluster, started; stopped and removed at the end whatever happened."""
    reason = available()
    if reason is not None:
        pytest.skip(reason)
    # not under pytest's tmp_path: that is root's (0700), the server runs as postgres
    folder = Path(tempfile.mkdtemp(prefix="ssd-pg-"))
    try:
        shutil.chown(folder, OWNER, OWNER)
        server = Postgres(folder)
        _as_owner(
            [
                _tool("initdb"),
                "-D",
                str(server.data),
                "-A",
                "trust",
                "-U",
                OWNER,
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ]
        )
        hba = server.data / "pg_hba.conf"  # before initdb's trust for every role
        hba.write_text(f"local all +{PASSWORD_GROUP} scram-sha-256\n{hba.read_text()}")
        server.start()
        try:
            yield server
        finally:
            server.stop("immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
