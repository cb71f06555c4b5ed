"""The results database's schema, its version and the migrations between versions.

SQLite in WAL mode: the controller writes each test's records in one
transaction, so a run killed at any point keeps every test finished before it
(and stays ``complete = 0``).  Readers never block the writer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pytest_ssd.errors import DatabaseError

#: seconds a connection waits for another writer's lock before it gives up
BUSY_TIMEOUT_S = 30.0

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
    start TEXT NOT NULL, end TEXT,
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
    start TEXT, end TEXT, seconds REAL,
    bytes_written INTEGER, bytes_read INTEGER, bytes_discarded INTEGER, fio_written INTEGER,
    data TEXT NOT NULL                 -- JSON: the whole transition, steps and verdicts
);
CREATE TABLE measurements (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    dut_id TEXT NOT NULL, test TEXT NOT NULL, name TEXT NOT NULL,
    pattern TEXT, block_size INTEGER, iodepth INTEGER, numjobs INTEGER, read_pct INTEGER,
    start TEXT, end TEXT, artifacts TEXT,
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

#: (version, SQL) in order; a database at version N gets every later script
MIGRATIONS: tuple[tuple[int, str], ...] = ((1, _V1),)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def connect(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """A connection to the database at *path*, migrated to :data:`SCHEMA_VERSION`."""
    if not create and not path.is_file():
        raise DatabaseError(f"{path}: no results database here (a pytest-ssd run creates it)")
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"{path}: not a pytest-ssd results database ({exc})") from None
    return conn


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`, one migration per transaction."""
    current = version(conn)
    if current > SCHEMA_VERSION:
        raise DatabaseError(
            f"{path}: schema version {current} is newer than this pytest-ssd's"
            f" ({SCHEMA_VERSION}): upgrade pytest-ssd"
        )
    for number, script in MIGRATIONS:
        if number <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if version(conn) < number:  # another process may have migrated meanwhile
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _statements(script: str) -> list[str]:
    """The statements of *script*, comments removed (they may hold a ';')."""
    code = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    return [s.strip() for s in code.split(";") if s.strip()]
