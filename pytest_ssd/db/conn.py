"""One connection to the results database, SQLite or PostgreSQL, behind the same few calls.

Every query is written once, in the SQL both understand, with ``?`` for its
parameters; :class:`PgConn` hands psycopg its own spelling (``%s``).  The
schema's scripts are SQLite's: :func:`pg_ddl` gives PostgreSQL the types that
keep the same values (64-bit integers, doubles, bytes).  Rows of both are read
by column name or position (``sqlite3.Row``, :class:`PgRow`).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from pytest_ssd.errors import DatabaseError

if TYPE_CHECKING:
    import psycopg


class Row(Protocol):
    """A row read by column name or position (``sqlite3.Row``, :class:`PgRow`)."""

    def __getitem__(self, key: Any) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    """What the db code uses of a DB-API cursor."""

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Unreachable(DatabaseError):
    """The database server cannot be reached, or the connection to it was lost."""

    def __init__(self, where: str, reason: str, hint: str | None = None) -> None:
        super().__init__(f"{where}: {reason}: {hint or REACH}")
        self.reason = reason


class Refused(DatabaseError):
    """The database server answered, and refused the login: a configuration error (the user,
    its password, the database, the server's pg_hba.conf), not a server away."""


class Conn:
    """A connection; the SQLite one (the base) passes every call straight to sqlite3."""

    kind = "sqlite"
    #: how a write transaction starts (SQLite: take the write lock at once, no upgrade later)
    begin = "BEGIN IMMEDIATE"
    #: what orders a run's devices as they were added
    order = "rowid"

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self.raw.execute(sql, tuple(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.raw.executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        return self.raw.in_transaction

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.raw.close()

    def durable(self) -> None:
        """This transaction's commit waits for the disk (SQLite's WAL: as every commit does)."""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN ... COMMIT; any exception rolls back (when the database has not already)."""
        self.execute(self.begin)
        try:
            yield
            self.execute("COMMIT")
        except BaseException:
            if self.in_transaction:
                with contextlib.suppress(sqlite3.Error, DatabaseError):
                    self.execute("ROLLBACK")
            raise


#: transactions a server's connection sends before it reads their answers
SYNC_EVERY = 32


class PgRow(tuple[Any, ...]):
    """A PostgreSQL row read by position or column name, like ``sqlite3.Row``."""

    names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            key = self.names[key]
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


def _pg_rows(cursor: Any) -> Any:
    """psycopg's row factory: :class:`PgRow` with the cursor's column names."""
    names = {column.name: i for i, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> PgRow:
        row = PgRow(values)
        row.names = names
        return row

    return make


class PgConn(Conn):
    """A psycopg connection in autocommit mode: transactions are the BEGIN/COMMIT we send.

    Every psycopg error becomes a one-line :class:`DatabaseError` naming the
    database (its password hidden); a lost or refused connection is
    :class:`Unreachable`.
    """

    kind = "postgresql"
    begin = "BEGIN"
    order = "seq"

    def __init__(self, raw: psycopg.Connection[Any], where: str, *, reader: bool = False) -> None:
        self.pg = raw
        self.where = where
        #: a reader's (pytest-ssd list, report, compare ...) errors say nothing of sessions
        self.reader = reader
        self._sql: dict[str, str] = {}
        #: the pipeline transactions go through, open from the first to close()
        self._pipe: Any = None
        self._open = contextlib.ExitStack()
        self._unsynced = 0
        self._wait = False

    def _spelled(self, sql: str) -> str:
        spelled = self._sql.get(sql)
        if spelled is None:
            spelled = self._sql[sql] = sql.replace("%", "%%").replace("?", "%s")
        return spelled

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        with self.errors():
            return self.pg.execute(self._spelled(sql), tuple(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.errors(), self.pg.cursor() as cur:
            cur.executemany(self._spelled(sql), [tuple(r) for r in rows])

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus  # noqa: PLC0415  # only with a server

        return self.pg.info.transaction_status in (
            TransactionStatus.INTRANS,
            TransactionStatus.INERROR,
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._open.close()  # the pipeline: what was sent is answered first
        with contextlib.suppress(Exception):
            self.pg.close()

    def durable(self) -> None:
        """This commit waits for the server's disk, and with it every commit before it.

        A writer's commits do not wait (``synchronous_commit = off``, see connect_pg):
        the WAL is written in order, so the run's last commit makes all of it durable.
        """
        self.execute("SET LOCAL synchronous_commit = on")
        self._wait = True

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN ... COMMIT sent without waiting for the server's answer.

        Transactions go through one pipeline: the server runs each as it comes
        (each commits or not as a whole), the answers are read every
        :data:`SYNC_EVERY` transactions and after :meth:`durable` (the run's end),
        so a test costs no round trip.  A failure, also one of a transaction sent
        before, raises at latest then; the run's spool has every row anyway.
        """
        with self.errors():
            if self._pipe is None:
                self._pipe = self._open.enter_context(self.pg.pipeline())
            try:
                self.pg.execute("BEGIN")
                yield
                self.pg.execute("COMMIT")
                self._unsynced += 1
                if self._wait or self._unsynced >= SYNC_EVERY:
                    self._pipe.sync()
                    self._unsynced, self._wait = 0, False
            except BaseException:
                with contextlib.suppress(Exception):
                    self.pg.execute("ROLLBACK")
                    self._pipe.sync()
                raise

    @contextmanager
    def errors(self) -> Iterator[None]:
        import psycopg  # noqa: PLC0415  # only with a server

        try:
            yield
        except psycopg.Error as exc:
            raise pg_error(self.where, exc, reader=self.reader) from None


#: what to do when the server cannot be reached
REACH = (
    "check that the server runs and the URL (host, port or socket folder, database, user);"
    " a session records into the run folder meanwhile ('pytest-ssd sync' uploads it)"
)


#: what to do when the server cannot be reached by a command that reads it
READ_REACH = (
    "check that the server runs and the URL (host, port or socket folder, database, user);"
    " nothing was read or written"
)


#: what to do when the server refuses the login
REFUSED = (
    "the server refused the login: check the user and its password (~/.pgpass, PGSERVICE"
    " or PGPASSWORD: docs/database.md), the database and the server's pg_hba.conf"
)

#: what the server (or libpq, for a password it was not given) says when it refuses the
#: login; a client has no SQLSTATE before it is logged in (28P01, 28000, 3D000, 42501)
_LOGIN_REFUSED = re.compile(
    r"authentication failed|no password supplied|pg_hba\.conf|role \S+ does not exist"
    r"|is not permitted to log in|permission denied for database|database \S+ does not exist"
)


def pg_error(where: str, exc: Exception, *, reader: bool = False) -> DatabaseError:
    """One line for a psycopg error on the database *where* (a *reader*'s: no word of spools).

    A server away is :class:`Unreachable` (a session goes on in its spool); a server that
    refuses the login is :class:`Refused` (a session is refused at its start).
    """
    import psycopg  # noqa: PLC0415

    reason = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, psycopg.OperationalError) and _LOGIN_REFUSED.search(reason):
        return Refused(f"{where}: {reason}: {REFUSED}")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return Unreachable(where, reason, READ_REACH if reader else REACH)
    return DatabaseError(f"{where}: {reason}")


#: SQLite's column types -> PostgreSQL's holding the same values
_PG_TYPES = (
    (re.compile(r"\bINTEGER PRIMARY KEY\b"), "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
)


def pg_ddl(statement: str) -> str:
    """A statement of the schema's (SQLite's) scripts in PostgreSQL's types."""
    for pattern, replacement in _PG_TYPES:
        statement = pattern.sub(replacement, statement)
    return statement
