"""Opening the results database wherever it is: an SQLite file or a PostgreSQL server."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pytest_ssd.db.conn import Conn
from pytest_ssd.db.schema import check, check_intact, connect, connect_reader
from pytest_ssd.db.url import DbUrl, db_url


def open_writer(target: Path | str | DbUrl) -> Conn:
    """A connection that writes, the schema migrated (a new database created)."""
    url = db_url(target)
    if url.path is not None:
        return Conn(connect(url.path))
    from pytest_ssd.db.pg import connect_pg  # noqa: PLC0415  # psycopg only for a server

    return connect_pg(url)


def open_reader(target: Path | str | DbUrl) -> Conn:
    """A read-only connection; its rows are read by column name."""
    url = db_url(target)
    if url.path is not None:
        raw = connect_reader(url.path)
        raw.row_factory = sqlite3.Row
        return Conn(raw)
    from pytest_ssd.db.pg import connect_pg  # noqa: PLC0415

    return connect_pg(url, reader=True)


def schema_version(target: Path | str | DbUrl) -> int:
    """The schema version of the results database at *target*, 0 where there is none yet (no
    SQLite file, or a server's database pytest-ssd has made no tables in: a run makes it)."""
    url = db_url(target)
    if url.path is not None:
        found = check(url.path)
        return 0 if found is None else found.version
    from pytest_ssd.db.pg import schema_version as on_server  # noqa: PLC0415

    return on_server(url)


def check_writer(target: Path | str | DbUrl) -> None:
    """Refuse (one line) a database a session could not record its run into, before the run
    folder is made: not ours, newer, damaged, or (a server's) not writable by the role.
    Nothing is written, nor made where there is no database yet."""
    url = db_url(target)
    if url.path is not None:
        check_intact(url.path)
        return
    from pytest_ssd.db.pg import check_writer as check_server  # noqa: PLC0415

    check_server(url)
