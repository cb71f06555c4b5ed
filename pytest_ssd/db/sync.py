"""``pytest-ssd sync``: a run's spool uploaded into a database, once however often it is run.

Everything goes in one transaction.  Every row the writer made carries its
number in the run (``seq``, unique per run) or a natural key (hosts, devices,
the run's devices, its tests), so a row the database has already (written
before the server was lost, or by an earlier sync) is left as it is; the
run's end and its tests' outcomes are taken from the spool, which saw them last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ssd.db.conn import Conn, Row
from pytest_ssd.db.opening import open_reader, open_writer
from pytest_ssd.db.url import DbUrl
from pytest_ssd.db.writer import insert
from pytest_ssd.errors import DatabaseError

#: tables of a run's rows that reference nothing but the run (their ``seq`` keys them)
_NUMBERED = ("derived", "verdicts", "transitions", "series")
_ONCE = "ON CONFLICT (run_id, seq) DO NOTHING"


def sync_run(spool: Path, target: DbUrl) -> tuple[str, int]:
    """Upload the run in *spool* into *target*; (its run id, the rows added)."""
    source = open_reader(spool)
    try:
        runs = source.execute("SELECT id FROM runs").fetchall()
        if len(runs) != 1:
            raise DatabaseError(f"{spool}: holds {len(runs)} runs, not one: not a run's spool")
        run_id = str(runs[0][0])
        conn = open_writer(target)
        try:
            with conn.transaction():
                added = copy_run(source, conn, run_id)
        finally:
            conn.close()
    finally:
        source.close()
    return run_id, added


def copy_run(source: Conn, target: Conn, run_id: str) -> int:
    """Every row of *run_id* from *source* into *target* (in its transaction); rows added.

    Rows go in the order they were written, so the target lists them as the source does.
    """
    before = count_rows(target, run_id)
    run = _row(source.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
    host = source.execute("SELECT * FROM hosts WHERE id = ?", (run["host_id"],)).fetchone()
    run["host_id"] = _keyed(target, "hosts", _row(host)) if host is not None else None
    keep_last = ", ".join(f'"{c}" = excluded."{c}"' for c in ("end", "complete", "outcome"))
    insert(target, "runs", run, f"ON CONFLICT (id) DO UPDATE SET {keep_last}")
    for row in _rows(source, "SELECT * FROM run_devices WHERE run_id = ? ORDER BY seq", run_id):
        device = _row(
            source.execute("SELECT * FROM devices WHERE id = ?", (row["device_id"],)).fetchone()
        )
        row["device_id"] = _keyed(target, "devices", device)
        insert(target, "run_devices", row, "ON CONFLICT (run_id, dut_id) DO NOTHING")
    last = ", ".join(f"{c} = excluded.{c}" for c in ("outcome", "duration_s", "message", "suite"))
    for row in _rows(source, "SELECT * FROM tests WHERE run_id = ? ORDER BY id", run_id):
        row.pop("id")
        insert(target, "tests", row, f"ON CONFLICT (run_id, nodeid) DO UPDATE SET {last}")
    for table in _NUMBERED:
        for row in _rows(source, f"SELECT * FROM {table} WHERE run_id = ? ORDER BY id", run_id):
            row.pop("id")
            insert(target, table, row, _ONCE)
    mine = "SELECT DISTINCT series_key FROM measurements WHERE run_id = ?"
    for row in _rows(source, f"SELECT * FROM series_keys WHERE key IN ({mine})", run_id):
        insert(target, "series_keys", row, "ON CONFLICT (key) DO NOTHING")
    for row in _rows(source, "SELECT * FROM measurements WHERE run_id = ? ORDER BY id", run_id):
        _measurement(source, target, row)
    return count_rows(target, run_id) - before


#: how many rows a run has in each table (metrics and percentiles through its measurements)
_COUNTS = " + ".join(
    [
        "(SELECT count(*) FROM runs WHERE id = ?)",
        *(
            f"(SELECT count(*) FROM {t} WHERE run_id = ?)"
            for t in ("run_devices", "tests", *_NUMBERED, "measurements")
        ),
        *(
            f"(SELECT count(*) FROM {t} x JOIN measurements m ON m.id = x.measurement_id"
            " WHERE m.run_id = ?)"
            for t in ("metrics", "percentiles")
        ),
    ]
)


def count_rows(conn: Conn, run_id: str) -> int:
    """The rows of run *run_id* in the database (its hosts and devices are shared: not counted)."""
    return int(conn.execute(f"SELECT {_COUNTS}", (run_id,) * _COUNTS.count("?")).fetchone()[0])


def _measurement(source: Conn, target: Conn, row: dict[str, Any]) -> None:
    """A measurement and its metrics and percentiles (all, or none: they came together)."""
    old = row.pop("id")
    new = insert(target, "measurements", row, "ON CONFLICT (run_id, seq) DO NOTHING RETURNING id")
    if new is None:
        return
    for table in ("metrics", "percentiles"):
        for part in _rows(source, f"SELECT * FROM {table} WHERE measurement_id = ?", old):
            part["measurement_id"] = new
            insert(target, table, part)


def _row(row: Row | None) -> dict[str, Any]:
    if row is None:
        raise DatabaseError("the spool lacks a row its run refers to: it was changed")
    return dict(zip(row.keys(), tuple(row), strict=True))


def _rows(conn: Conn, sql: str, key: Any) -> list[dict[str, Any]]:
    return [_row(r) for r in conn.execute(sql, (key,)).fetchall()]


def _keyed(target: Conn, table: str, row: dict[str, Any]) -> int:
    """The id in *target* of the row with *row*'s key (added when it is not there)."""
    row.pop("id")
    insert(target, table, row, "ON CONFLICT (key) DO NOTHING")
    found = target.execute(f"SELECT id FROM {table} WHERE key = ?", (row["key"],)).fetchone()
    return int(found[0])


@dataclass(frozen=True)
class Spooled:
    """What a run's spool holds of it (a lab server's run is recorded in its folder too)."""

    complete: bool
    #: its rows (:func:`count_rows`): the server has them all once the run is synced
    rows: int


def spooled(spool: Path, run_id: str) -> Spooled | None:
    """Run *run_id* as its spool holds it (read only); None when the spool lacks it."""
    conn = open_reader(spool)
    try:
        row = conn.execute("SELECT complete FROM runs WHERE id = ?", (run_id,)).fetchone()
        return None if row is None else Spooled(bool(row[0]), count_rows(conn, run_id))
    finally:
        conn.close()
