"""A database the run could not be recorded into is refused at configure, in one line, before
its run folder exists: nothing made, ``latest`` untouched, with and without ``-n``.

SQLite files that are damaged, not pytest-ssd's or newer; a lab server's database that is
newer, or whose role may only read (a real server, tests/pgserver.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pytest_ssd.db.opening import open_writer
from pytest_ssd.db.schema import SCHEMA_VERSION
from tests.e2e.test_safety_extensions import _earlier_run, _one_error
from tests.pgserver import Postgres
from tests.unit.db_fixtures import as_older, corrupt_page, foreign_db, sha256, write_run


def _damaged(db: Path) -> str:
    write_run(db, "20250101-000000-1", "lab")
    corrupt_page(db, "runs")
    return f"ERROR: {db}: the database is damaged (quick_check: "


def _foreign(db: Path) -> str:
    foreign_db(db)
    return f"ERROR: {db}: not a pytest-ssd results database (SQLite application id 0x0,"


def _newer(db: Path) -> str:
    write_run(db, "20250101-000000-1", "lab")
    as_older(db, SCHEMA_VERSION + 1)
    return f"ERROR: {db}: schema version {SCHEMA_VERSION + 1} is newer than this pytest-ssd's"


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "n2"])
@pytest.mark.parametrize("make", [_damaged, _foreign, _newer], ids=["damaged", "foreign", "newer"])
def test_a_database_a_run_cannot_write_is_refused_before_its_run_folder(
    run_ssd: Any, tmp_path: Path, make: Callable[[Path], str], workers: tuple[str, ...]
) -> None:
    db = tmp_path / "db" / "results.sqlite"
    db.parent.mkdir()
    start = make(db)
    before = sha256(db)
    _earlier_run(tmp_path / "reports")
    line = _one_error(run_ssd("--dut=scratch:64M", f"--ssd-db={db}", *workers))
    assert line.startswith(start), line
    assert sha256(db) == before, "nothing written into it"


@pytest.fixture
def lab(postgres: Postgres) -> tuple[Postgres, str]:
    """A database of pytest-ssd's current schema on the session's server, and its name."""
    name = f"lab_{time.monotonic_ns()}"
    open_writer(postgres.create_database(name)).close()
    return postgres, name


def _owner(server: Postgres, name: str, *sql: str) -> None:
    with psycopg.connect(server.url(name), autocommit=True) as pg:
        for statement in sql:
            pg.execute(statement)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "n2"])
def test_a_read_only_role_is_refused_before_its_run_folder(
    run_ssd: Any, tmp_path: Path, lab: tuple[Postgres, str], workers: tuple[str, ...]
) -> None:
    server, name = lab
    role = f"reader_{time.monotonic_ns()}"
    _owner(
        server,
        name,
        f"CREATE ROLE {role} LOGIN",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
    )
    _earlier_run(tmp_path / "reports")
    url = f"postgresql://{role}@/{name}?host={server.socket}"
    line = _one_error(run_ssd("--dut=scratch:64M", f"--ssd-db={url}", *workers))
    assert line == (
        f"ERROR: postgresql://{role}@/{name}?host={server.socket}: this role may not record a run"
        " here (no INSERT on hosts, INSERT on devices, INSERT on runs, INSERT on run_devices and"
        " 11 more): a session adds rows to every table of pytest-ssd's and updates runs and"
        " tests; grant that, or give a role that has it (list, report and compare need only"
        " SELECT)"
    )
    # a role whose transactions are read-only, whatever it was granted
    _owner(server, name, f"GRANT INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO {role}")
    _owner(server, name, f"ALTER ROLE {role} SET default_transaction_read_only = on")
    line = _one_error(run_ssd("--dut=scratch:64M", f"--ssd-db={url}", *workers))
    assert "this role may not record a run here (its transactions are read-only)" in line, line


def test_a_newer_schema_on_the_server_is_refused_before_its_run_folder(
    run_ssd: Any, tmp_path: Path, lab: tuple[Postgres, str]
) -> None:
    server, name = lab
    _owner(server, name, f"UPDATE pytest_ssd_schema SET version = {SCHEMA_VERSION + 1}")
    _earlier_run(tmp_path / "reports")
    line = _one_error(run_ssd("--dut=scratch:64M", f"--ssd-db={server.url(name)}"))
    assert line == (
        f"ERROR: {server.url(name)}: schema version {SCHEMA_VERSION + 1} is newer than this"
        f" pytest-ssd's ({SCHEMA_VERSION}): upgrade pytest-ssd"
    )
