"""The results database's schema, its version and the migrations between versions.

SQLite in WAL mode: the controller writes each test's records in one
transaction, so a run killed at any point keeps every test finished before it
(and stays ``complete = 0``).  Readers never block the writer.

A database is ours when SQLite's ``application_id`` is :data:`APPLICATION_ID`
(or, written before it was set, when its ``user_version`` and tables are
ours).  Anything else is refused before a byte of it is written: it is looked
at through a read-only connection first.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.db.faults import damaged, database_error
from pytest_ssd.documents import not_a_file
from pytest_ssd.errors import DatabaseError

#: seconds a connection waits for another writer's lock before it gives up
BUSY_TIMEOUT_S = 30.0
#: between two tries of the switch to the write-ahead log (:func:`_to_wal`)
WAL_RETRY_PAUSE_S = 0.02
#: how long :func:`check` looks again at a file its lock-free probe finds damaged or not
#: ours: a file another session is writing reads torn without locks (a write lasts ms)
PROBE_RETRY_S = 1.0
PROBE_PAUSE_S = 0.05

_V1 = """
CREATE TABLE hosts (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    hostname TEXT, kernel TEXT, machine TEXT, cpu TEXT, cpus INTEGER
);
CREATE TABLE devices (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,          -- model|serial|firmware; run|dut|path|size without a serial
    model TEXT, serial TEXT, firmware TEXT, size_bytes INTEGER, transport TEXT,
    identity TEXT NOT NULL             -- JSON: the identity as first seen
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    host_id INTEGER REFERENCES hosts(id),
    start TEXT NOT NULL, "end" TEXT,
    complete INTEGER NOT NULL DEFAULT 0, -- 1 once pytest finished the session
    outcome TEXT,                      -- JSON: {"passed": n, ...}
    run_dir TEXT NOT NULL,
    environment TEXT NOT NULL          -- JSON: host, kernel, tool versions, argv
);
CREATE TABLE run_devices (
    run_id TEXT NOT NULL REFERENCES runs(id),
    dut_id TEXT NOT NULL,
    device_id INTEGER NOT NULL REFERENCES devices(id),
    label TEXT NOT NULL,
    path TEXT, scratch INTEGER NOT NULL, datasheet TEXT,
    description TEXT NOT NULL,         -- JSON: identity, summary, note
    PRIMARY KEY (run_id, dut_id)
);
CREATE INDEX run_devices_label ON run_devices(label);
CREATE TABLE tests (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    nodeid TEXT NOT NULL,
    outcome TEXT, duration_s REAL, message TEXT,
    UNIQUE (run_id, nodeid)
);
CREATE TABLE transitions (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    dut_id TEXT NOT NULL, test TEXT NOT NULL, target TEXT NOT NULL,
    start TEXT, "end" TEXT, seconds REAL,
    bytes_written INTEGER, bytes_read INTEGER, bytes_discarded INTEGER, fio_written INTEGER,
    data TEXT NOT NULL                 -- JSON: the whole transition, steps and verdicts
);
CREATE TABLE measurements (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    dut_id TEXT NOT NULL, test TEXT NOT NULL, name TEXT NOT NULL,
    pattern TEXT, block_size INTEGER, iodepth INTEGER, numjobs INTEGER, read_pct INTEGER,
    start TEXT, "end" TEXT, artifacts TEXT,
    workload TEXT NOT NULL,            -- JSON: the fio job as data
    metrics TEXT NOT NULL              -- JSON: per direction, as results.json
);
CREATE INDEX measurements_run ON measurements(run_id, dut_id);
CREATE TABLE metrics (
    measurement_id INTEGER NOT NULL REFERENCES measurements(id),
    direction TEXT NOT NULL,
    iops REAL, bw_mib_s REAL, bw_mb_s REAL, io_bytes INTEGER, runtime_s REAL,
    lat_mean_us REAL, clat_min_us REAL, clat_max_us REAL, clat_samples INTEGER,
    PRIMARY KEY (measurement_id, direction)
);
CREATE TABLE percentiles (
    measurement_id INTEGER NOT NULL REFERENCES measurements(id),
    direction TEXT NOT NULL, p REAL NOT NULL,
    us REAL, resolved INTEGER NOT NULL,   -- us is NULL when the sample cannot resolve p
    PRIMARY KEY (measurement_id, direction, p)
);
CREATE TABLE series (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    dut_id TEXT NOT NULL, test TEXT NOT NULL, name TEXT NOT NULL,
    meta TEXT NOT NULL,                -- JSON: units, interval ...
    arrays BLOB NOT NULL               -- compressed npz (pytest_ssd.db.arrays)
);
CREATE INDEX series_run ON series(run_id, dut_id);
CREATE TABLE derived (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    dut_id TEXT NOT NULL, test TEXT NOT NULL, name TEXT NOT NULL,
    "values" TEXT NOT NULL             -- JSON
);
CREATE TABLE verdicts (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    dut_id TEXT NOT NULL, test TEXT NOT NULL, datasheet TEXT, line TEXT NOT NULL,
    verdict TEXT NOT NULL, ratio REAL,
    row TEXT NOT NULL                  -- JSON: the conformance row
);
"""

#: 2: the suite each test belongs to (what its conftest.py declares), for the report's sections
_V2 = "ALTER TABLE tests ADD COLUMN suite TEXT;"

#: 3: the test host a device was in (``host:port`` of ``--dut=ssh://``; NULL: the controller)
_V3 = "ALTER TABLE run_devices ADD COLUMN host TEXT;"

#: 4: many writers, loads that can be repeated: each row of a run carries the writer's
#: number for it (``seq``), unique in its run, so loading a run again (a retry, ``pytest-ssd
#: sync``) adds nothing; the order of a run's devices without SQLite's rowid
SEQ_TABLES = ("run_devices", "measurements", "derived", "verdicts", "transitions", "series")
_V4 = "".join(
    f"ALTER TABLE {t} ADD COLUMN seq INTEGER; CREATE UNIQUE INDEX {t}_seq ON {t}(run_id, seq);"
    for t in SEQ_TABLES
)

#: 5: series a lab can follow (pytest_ssd.results.history): each measurement's series key,
#: its drive's firmware and serial beside it (not part of it); the series' parts, once each
_V5 = """
CREATE TABLE series_keys (
    key TEXT NOT NULL PRIMARY KEY,     -- SeriesIdentity.key: a hash of the parts below
    model TEXT, size_bytes INTEGER, point TEXT NOT NULL, state TEXT, profile TEXT,
    host_class TEXT
);
CREATE INDEX series_keys_point ON series_keys(point);
CREATE INDEX series_keys_model ON series_keys(model);
ALTER TABLE measurements ADD COLUMN series_key TEXT;
ALTER TABLE measurements ADD COLUMN firmware TEXT;
ALTER TABLE measurements ADD COLUMN serial TEXT;
CREATE INDEX measurements_series_key ON measurements(series_key);
"""

#: 6: the build under test per device of a run (``--ssd-build``, else the firmware revision;
#: NULL: not known); a run before it had no option: its build is its drive's firmware
_V6 = """
ALTER TABLE run_devices ADD COLUMN build TEXT;
UPDATE run_devices
    SET build = (SELECT v.firmware FROM devices v WHERE v.id = run_devices.device_id);
CREATE INDEX run_devices_build ON run_devices(build);
"""

#: (version, SQL) in order; a database at version N gets every later script
MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, _V1),
    (2, _V2),
    (3, _V3),
    (4, _V4),
    (5, _V5),
    (6, _V6),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
#: a device's build in a run recorded before migration 6 (its drive's firmware), as read
_BUILD_AS = "(SELECT v.firmware FROM main.devices v WHERE v.id = d.device_id) AS build"
#: how a reader sees a database without migration N as if it had it: TEMP views (in the
#: reader's connection, not in the file) shadowing the tables the migration changed.  A
#: migration without an entry here cannot be read so: such a database is refused.
READ_AS: dict[int, tuple[str, ...]] = {
    2: ("CREATE TEMP VIEW tests AS SELECT *, NULL AS suite FROM main.tests",),
    3: (  # 6's build too: a database without 3 lacks 6 (whose view is then not made again)
        f"CREATE TEMP VIEW run_devices AS SELECT d.*, NULL AS host, {_BUILD_AS},"
        " d.rowid AS rowid FROM main.run_devices d",
    ),
    4: (),  # its column only orders and keys new rows: older ones read as they are
    5: (  # measurements before it belong to no series
        "CREATE TEMP VIEW measurements AS SELECT *, NULL AS series_key, NULL AS firmware,"
        " NULL AS serial FROM main.measurements",
        "CREATE TEMP TABLE series_keys (key TEXT PRIMARY KEY, model TEXT, size_bytes INTEGER,"
        " point TEXT NOT NULL, state TEXT, profile TEXT, host_class TEXT)",
    ),
    6: (  # a device's build was its firmware, as the migration sets it
        "CREATE TEMP VIEW IF NOT EXISTS run_devices AS SELECT d.*,"
        f" {_BUILD_AS}, d.rowid AS rowid FROM main.run_devices d",
    ),
}
#: SQLite's ``PRAGMA application_id`` of a pytest-ssd database: "pSSD"
APPLICATION_ID = int.from_bytes(b"pSSD", "big")
#: the tables every version of the schema has: an older database of ours without the id
_OURS = frozenset({"runs", "devices", "run_devices", "tests", "measurements", "metrics"})


@dataclass(frozen=True)
class Found:
    """What a file at the database's path holds, as far as pytest-ssd cares."""

    application_id: int
    version: int
    tables: frozenset[str]

    @property
    def empty(self) -> bool:
        return not self.application_id and not self.version and not self.tables

    @property
    def ours(self) -> bool:
        if self.application_id == APPLICATION_ID:
            return True
        return self.application_id == 0 and self.version >= 1 and self.tables >= _OURS


def connect(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """A connection to the database at *path*, migrated to :data:`SCHEMA_VERSION`.

    Refuses (:class:`DatabaseError`, the file untouched) anything that is not a
    pytest-ssd database or is newer than this pytest-ssd; *create* makes a new
    one where there is none (an empty file counts as none).
    """
    found = check(path)
    if found is None and not create:
        raise DatabaseError(f"{path}: no results database here (a pytest-ssd run creates it)")
    made = found is None and not path.exists()
    try:
        if found is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise database_error(path, exc) from None
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, path)
        # after the schema: a file this connection did not make ours stays as it was
        _to_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException as exc:
        conn.close()
        if made:  # a file this call made and could not fill: leave no empty database behind
            with contextlib.suppress(OSError):
                if path.stat().st_size == 0:
                    path.unlink()
        if isinstance(exc, sqlite3.Error):
            raise database_error(path, exc) from None
        raise
    return conn


def _to_wal(conn: sqlite3.Connection) -> None:
    """Switch *conn*'s database to the write-ahead log (readers never wait for the writer).

    SQLite answers a switch that meets another connection "database is locked" at once,
    without its busy wait (8 sessions creating one database together met it: 7 switches
    in 1,200): it is tried again, until :data:`BUSY_TIMEOUT_S`, unless another connection
    switched it meanwhile."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_PAUSE_S)


def connect_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection to the database at *path*: never migrated, never written.

    SQLite opens the file ``mode=ro`` and the connection is ``query_only``.  A
    database of an older schema is read as it is where :data:`READ_AS` can show it
    as the current one; otherwise it is refused in one line: a pytest-ssd session
    (a writer) migrates it.  Newer schemas and files that are not ours are refused
    as :func:`connect` refuses them.
    """
    found = check(path)
    if found is None:
        raise DatabaseError(f"{path}: no results database here (a pytest-ssd run creates it)")
    if found.version < SCHEMA_VERSION and not _readable(found.version):
        raise DatabaseError(
            f"{path}: schema version {found.version} is older than this pytest-ssd's"
            f" ({SCHEMA_VERSION}) and cannot be read as it is: a pytest-ssd session (a writer)"
            " migrates it, after which older pytest-ssd versions cannot read it: back it up first"
        )
    conn = _read_only(path)
    try:
        for number in range(found.version + 1, SCHEMA_VERSION + 1):
            for statement in READ_AS.get(number, ()):
                conn.execute(statement)  # TEMP: in this connection's memory, not in the file
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        conn.close()
        raise database_error(path, exc) from None
    return conn


def check_intact(path: Path) -> None:
    """Refuse (:class:`DatabaseError`) a file at *path* a run cannot add its run to: not
    ours, newer than this pytest-ssd, or damaged.  Only read (nothing is made where there
    is no database yet): a session asks before its run folder exists."""
    if check(path) is None:
        return
    conn = _read_only(path)
    try:
        intact(conn, path)
    finally:
        conn.close()


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write the file at *path* (a one-line DatabaseError else)."""
    try:
        uri = f"{path.absolute().as_uri()}?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise database_error(path, exc) from None


def intact(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse the database *conn* reads when SQLite's quick_check finds it damaged."""
    try:
        problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    except sqlite3.Error as exc:
        raise database_error(path, exc) from None
    if problem != "ok":
        raise damaged(path, "quick_check: " + " ".join(str(problem).split()))


def _readable(old: int) -> bool:
    """Whether :data:`READ_AS` shows a database at version *old* as the current schema."""
    return old >= 1 and all(n in READ_AS for n in range(old + 1, SCHEMA_VERSION + 1))


def check(path: Path) -> Found | None:
    """What is at *path*: None where there is no database yet (no file, or an empty one).

    Reads the file only (no journal, no lock) and raises :class:`DatabaseError`
    for a file that is not a pytest-ssd database, or one newer than this pytest-ssd.
    """
    try:
        status = path.stat()
        kind = not_a_file(status.st_mode)
        if kind is not None:  # SQLite would wait forever on a FIFO's open or read
            raise DatabaseError(f"{path}: {kind}, not a results database: give a file")
        if status.st_size == 0 and not _beside(path, "-wal").exists():
            return None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise database_error(path, exc) from None
    deadline = time.monotonic() + PROBE_RETRY_S
    while True:
        try:
            found = _probe(path)
            _accept(path, found)
        except DatabaseError:
            # a page caught mid-write reads as damage (8 sessions starting at once on a busy
            # machine met it): only what still reads so after PROBE_RETRY_S is said
            if time.monotonic() >= deadline:
                raise
            time.sleep(PROBE_PAUSE_S)
        else:
            return found


def _probe(path: Path) -> Found:
    """What the file at *path* holds, read without a lock (DatabaseError: it cannot be read)."""
    try:
        # immutable: no lock, no -wal or -shm made beside someone else's file; the header and
        # the table list are all it reads, and migrate() looks again inside its transaction
        uri = f"{path.absolute().as_uri()}?mode=ro&immutable=1"
        probe = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise database_error(path, exc) from None
    try:
        return _look(probe)
    except sqlite3.Error as exc:
        raise database_error(path, exc) from None
    finally:
        probe.close()


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _look(conn: sqlite3.Connection) -> Found:
    tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return Found(
        int(conn.execute("PRAGMA application_id").fetchone()[0]),
        int(conn.execute("PRAGMA user_version").fetchone()[0]),
        frozenset(str(name) for (name,) in tables),
    )


def _accept(path: Path, found: Found, *, empty: bool = False) -> None:
    """Raise DatabaseError unless *found* is a database of ours we can read (or *empty* one)."""
    if empty and found.empty:  # the new file being made (check() let only 0 bytes through)
        return
    if not found.ours:
        tables = ", ".join(sorted(found.tables)[:5]) or "none"
        raise DatabaseError(
            f"{path}: not a pytest-ssd results database (SQLite application id"
            f" {found.application_id:#x}, user version {found.version}, tables: {tables});"
            " it was left untouched: give another file"
        )
    if found.version > SCHEMA_VERSION:
        raise DatabaseError(
            f"{path}: schema version {found.version} is newer than this pytest-ssd's"
            f" ({SCHEMA_VERSION}): upgrade pytest-ssd"
        )


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`: every migration in one transaction.

    The transaction looks again at what the file holds (another process may
    have created or migrated it meanwhile) and sets the application id with the
    schema, so a file is never half ours.
    """
    found = _look(conn)
    if found.application_id == APPLICATION_ID and found.version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _look(conn)
        _accept(path, found, empty=True)
        for number, script in MIGRATIONS:
            if found.version < number:
                for statement in statements(script):
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def statements(script: str) -> list[str]:
    """The statements of *script*, comments removed (they may hold a ';')."""
    code = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    return [s.strip() for s in code.split(";") if s.strip()]
