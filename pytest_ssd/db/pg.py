"""The results database on a PostgreSQL server: the same schema, versioned in a table of its own.

The schema's version is the one row of ``pytest_ssd_schema``; the migrations
(:data:`~pytest_ssd.db.schema.MIGRATIONS`, in PostgreSQL's types) are applied
together in one transaction under an advisory lock, so sessions starting at
once on an empty database create it once.  A database with tables but no
version table is not ours and is refused untouched; a newer one is refused.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_ssd.db.conn import PgConn, Unreachable, _pg_rows, pg_ddl, pg_error
from pytest_ssd.db.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, statements
from pytest_ssd.db.url import DbUrl
from pytest_ssd.errors import DatabaseError

VERSION_TABLE = "pytest_ssd_schema"
#: seconds to wait for the server when the URL does not say (libpq waits forever)
CONNECT_TIMEOUT_S = 10


def connect_pg(url: DbUrl, *, reader: bool = False) -> PgConn:
    """A connection to the server at *url*, migrated (a writer's) or checked (a reader's)."""
    conn = _connect(url, reader=reader)
    try:
        found = _look(conn)
        _accept(conn.where, found, reader=reader)
        if found[0] < SCHEMA_VERSION:
            _migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def schema_version(url: DbUrl) -> int:
    """The schema version of the server's database at *url*, 0 where pytest-ssd has made no
    tables yet (a look: nothing is written; not ours or newer is refused as a writer would)."""
    conn = _connect(url, reader=True)
    try:
        found = _look(conn)
        _accept(conn.where, found)
        return found[0]
    finally:
        conn.close()


def _connect(url: DbUrl, *, reader: bool) -> PgConn:
    """A connection to the server at *url*, as it is (nothing looked at)."""
    import psycopg  # noqa: PLC0415  # SQLite users never load it
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415

    where = str(url)
    try:
        given = conninfo_to_dict(url.url)
    except psycopg.Error as exc:
        raise DatabaseError(f"{where}: not a PostgreSQL URL ({exc})") from None
    extra: dict[str, Any] = {"application_name": "pytest-ssd"}
    if "connect_timeout" not in given:
        extra["connect_timeout"] = CONNECT_TIMEOUT_S
    if reader:  # a reader never writes, whatever it runs
        extra["options"] = "-c default_transaction_read_only=on"
    else:
        # a test's commit does not wait for the server's disk: the run's end does
        # (PgConn.durable), and a server that crashes before it ends the connection, so the
        # session goes on in its spool, which 'pytest-ssd sync' uploads whole
        extra["options"] = "-c synchronous_commit=off"
    try:
        raw = psycopg.connect(url.url, autocommit=True, row_factory=_pg_rows, **extra)
    except psycopg.Error as exc:
        raise pg_error(where, exc, reader=reader) from None
    return PgConn(raw, where, reader=reader)


#: the tables a run adds rows to (all of the schema's), and those whose rows it changes
WRITTEN = tuple(
    name for _, script in MIGRATIONS for name in re.findall(r"CREATE TABLE (\w+)", script)
)
UPDATED = ("runs", "tests")


def check_writer(url: DbUrl) -> None:
    """Refuse (:class:`DatabaseError`, one line) a server's database a session cannot record
    its run into: not ours, newer than this pytest-ssd, read-only, or a role without the
    privileges a run needs; before anything is made.  Nothing is written.  A server that
    cannot be reached passes: the session records into its spool and says so."""
    try:
        conn = _connect(url, reader=False)
    except Unreachable:
        return
    try:
        found = _look(conn)
        _accept(conn.where, found)
        missing = _missing(conn, migrate=found[0] < SCHEMA_VERSION)
    finally:
        conn.close()
    if missing:
        raise DatabaseError(
            f"{conn.where}: this role may not record a run here ({missing}): a session adds"
            f" rows to every table of pytest-ssd's and updates {' and '.join(UPDATED)}; grant"
            " that, or give a role that has it (list, report and compare need only SELECT)"
        )


def _missing(conn: PgConn, *, migrate: bool) -> str | None:
    """What the connection's role lacks to record a run (*migrate*: and to make the schema)."""
    read_only, create = conn.execute(
        "SELECT current_setting('transaction_read_only') = 'on',"
        " has_schema_privilege(current_schema(), 'CREATE')"
    ).fetchone()
    if read_only:
        return "its transactions are read-only"
    if migrate and not create:
        return "no CREATE on the schema, to make pytest-ssd's tables"
    wanted = [(t, "INSERT") for t in WRITTEN] + [(t, "UPDATE") for t in UPDATED]
    rows = ", ".join("(CAST(? AS TEXT), CAST(? AS TEXT))" for _ in wanted)
    lacking = conn.execute(
        f"SELECT p, t FROM (VALUES {rows}) AS v(t, p) WHERE to_regclass(t) IS NOT NULL"
        " AND NOT has_table_privilege(t, p)",
        [value for pair in wanted for value in pair],
    ).fetchall()
    if not lacking:
        return None
    shown = ", ".join(f"{p} on {t}" for p, t in lacking[:4])
    return f"no {shown}" + (f" and {len(lacking) - 4} more" if len(lacking) > 4 else "")


def _look(conn: PgConn) -> tuple[int, frozenset[str]]:
    """(schema version, 0 without the version table; the tables of the current schema)."""
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    ).fetchall()
    tables = frozenset(str(r[0]) for r in rows)
    if VERSION_TABLE not in tables:
        return 0, tables
    row = conn.execute(f"SELECT max(version) FROM {VERSION_TABLE}").fetchone()
    return int(row[0] or 0), tables - {VERSION_TABLE}


def _accept(where: str, found: tuple[int, frozenset[str]], *, reader: bool = False) -> None:
    """Raise DatabaseError unless *found* is ours, not newer, and (for a *reader*) current."""
    version, tables = found
    if reader and version < SCHEMA_VERSION:
        raise DatabaseError(
            f"{where}: schema version {version} is older than this pytest-ssd's"
            f" ({SCHEMA_VERSION}): a pytest-ssd session (a writer) migrates it, after which"
            " older pytest-ssd versions cannot write to it: back it up first (pg_dump)"
        )
    if version == 0 and tables:
        listed = ", ".join(sorted(tables)[:5])
        raise DatabaseError(
            f"{where}: not a pytest-ssd results database (tables: {listed}, no {VERSION_TABLE});"
            " it was left untouched: give another database (createdb NAME)"
        )
    if version > SCHEMA_VERSION:
        raise DatabaseError(
            f"{where}: schema version {version} is newer than this pytest-ssd's"
            f" ({SCHEMA_VERSION}): upgrade pytest-ssd"
        )


def _migrate(conn: PgConn) -> None:
    """Every migration the database lacks, in one transaction (another session may be first)."""
    with conn.transaction():
        conn.execute(f"SELECT pg_advisory_xact_lock({APPLICATION_ID})")
        found = _look(conn)
        _accept(conn.where, found)
        version = found[0]
        if version == 0:
            conn.execute(f"CREATE TABLE {VERSION_TABLE} (version BIGINT NOT NULL)")
            conn.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES (0)")
        for number, script in MIGRATIONS:
            if number > version:
                for statement in statements(script):
                    conn.execute(pg_ddl(statement))
        conn.execute(f"UPDATE {VERSION_TABLE} SET version = ?", (SCHEMA_VERSION,))
