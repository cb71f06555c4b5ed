"""The controller's writer: one run into the results database, a transaction per test.

A write that fails (disk full, read-only, damaged file) rolls back its own
transaction only and raises a one-line :class:`DatabaseError`; every test
committed before stays readable.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.db.faults import damaged, database_error
from pytest_ssd.db.schema import connect
from pytest_ssd.results.record import Derived, Measurement, SeriesRecord, iso
from pytest_ssd.results.transition import Transition

#: workload fields kept as columns of ``measurements`` (the whole job is in ``workload``)
WORKLOAD_COLUMNS = ("pattern", "block_size", "iodepth", "numjobs", "read_pct")
#: per-direction figures kept as columns of ``metrics``
METRIC_COLUMNS = ("iops", "bw_mib_s", "bw_mb_s", "io_bytes", "runtime_s", "lat_mean_us")
_KEEP = "ON CONFLICT (key) DO NOTHING"


@dataclass
class TestRecords:
    """What one test report brought to the controller, stored together."""

    __test__ = False  # not a test class, whatever pytest makes of its name

    nodeid: str
    measurements: list[Measurement] = field(default_factory=list)
    derived: list[Derived] = field(default_factory=list)
    #: conformance rows (:meth:`pytest_ssd.specs.Verdict.as_dict` and where it was checked)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    #: each series with its arrays: a compressed npz (:mod:`pytest_ssd.db.arrays`)
    series: list[tuple[SeriesRecord, bytes]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any((self.measurements, self.derived, self.verdicts, self.transitions, self.series))


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _insert(cur: sqlite3.Cursor, table: str, row: dict[str, Any], tail: str = "") -> int:
    """INSERT *row* (column -> value) into *table*; the new row's id."""
    names = ", ".join(f'"{name}"' for name in row)
    marks = ", ".join("?" for _ in row)
    cur.execute(f"INSERT INTO {table} ({names}) VALUES ({marks}) {tail}", tuple(row.values()))
    return cur.lastrowid or 0


class RunWriter:
    """Writes one run; every method commits, so a killed run keeps what was written."""

    def __init__(self, path: Path, run_id: str, run_dir: Path, environment: dict[str, Any]):
        self.path = path
        self.run_id = run_id
        self.conn = connect(path)
        try:
            self._check_intact()
        except BaseException:
            self.conn.close()
            raise
        with self._transaction() as cur:
            host_id = self._host(cur, environment)
            _insert(
                cur,
                "runs",
                {
                    "id": run_id,
                    "host_id": host_id,
                    "start": iso(time.time()),
                    "run_dir": str(run_dir),
                    "environment": _json(environment),
                },
            )

    def _check_intact(self) -> None:
        """Refuse to add a run to a damaged database: writing into it could spread the damage."""
        try:
            problem = self.conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        except sqlite3.Error as exc:
            raise database_error(self.path, exc) from None
        if problem != "ok":
            raise damaged(self.path, "quick_check: " + " ".join(str(problem).split()))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """One transaction; a failure rolls back this one only and becomes a DatabaseError."""
        cur = self.conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            yield cur
            cur.execute("COMMIT")
        except BaseException as exc:
            if self.conn.in_transaction:  # SQLite may have rolled back already (disk full)
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise database_error(self.path, exc) from None
            raise

    @staticmethod
    def _host(cur: sqlite3.Cursor, env: dict[str, Any]) -> int:
        values = [env.get(k) for k in ("host", "kernel", "machine", "cpu", "cpus")]
        key = "|".join(str(v) for v in values)
        columns = ("hostname", "kernel", "machine", "cpu", "cpus")
        _insert(cur, "hosts", {"key": key, **dict(zip(columns, values, strict=True))}, _KEEP)
        return int(cur.execute("SELECT id FROM hosts WHERE key = ?", (key,)).fetchone()[0])

    def add_device(self, dut_id: str, description: dict[str, Any], label: str) -> None:
        """A device of this run: its identity (shared across runs) and its label here."""
        ident = description["identity"]
        if ident.get("serial"):
            key = f"{ident.get('model')}|{ident['serial']}|{ident.get('firmware')}"
        else:  # scratch files and loop devices: one device per run
            key = f"{self.run_id}|{dut_id}|{ident.get('path')}|{ident.get('size_bytes')}"
        with self._transaction() as cur:
            columns = ("model", "serial", "firmware", "size_bytes", "transport")
            row = {"key": key, **{c: ident.get(c) for c in columns}, "identity": _json(ident)}
            _insert(cur, "devices", row, _KEEP)
            device_id = cur.execute("SELECT id FROM devices WHERE key = ?", (key,)).fetchone()[0]
            _insert(
                cur,
                "run_devices",
                {
                    "run_id": self.run_id,
                    "dut_id": dut_id,
                    "device_id": device_id,
                    "label": label,
                    "path": description.get("path"),
                    "scratch": int(bool(description.get("scratch"))),
                    "datasheet": description.get("datasheet"),
                    "description": _json(description),
                    "host": description.get("host"),
                },
            )

    def add(self, records: TestRecords) -> None:
        """Everything one test report brought, in one transaction."""
        if not records:
            return
        with self._transaction() as cur:
            for m in records.measurements:
                self._measurement(cur, m)
            for t in records.transitions:
                self._transition(cur, t)
            for d in records.derived:
                row = {**self._of(d.device, d.test), "name": d.name, "values": _json(d.values)}
                _insert(cur, "derived", row)
            for v in records.verdicts:
                _insert(
                    cur,
                    "verdicts",
                    {
                        **self._of(v["device"], v["test"]),
                        "datasheet": v.get("datasheet"),
                        "line": v["id"],
                        "verdict": v["verdict"],
                        "ratio": v.get("ratio"),
                        "row": _json(v),
                    },
                )
            for s, blob in records.series:
                row = {**self._of(s.device, records.nodeid), "name": s.name, "meta": _json(s.meta)}
                _insert(cur, "series", {**row, "arrays": blob})

    def _of(self, dut_id: str, test: str) -> dict[str, Any]:
        return {"run_id": self.run_id, "dut_id": dut_id, "test": test}

    def _measurement(self, cur: sqlite3.Cursor, m: Measurement) -> None:
        shape = {key: m.workload.get(key) for key in WORKLOAD_COLUMNS}
        mid = _insert(
            cur,
            "measurements",
            {
                **self._of(m.device, m.test),
                "name": m.name,
                **shape,
                "start": m.start,
                "end": m.end,
                "artifacts": m.artifacts,
                "workload": _json(m.workload),
                "metrics": _json(m.metrics),
            },
        )
        for direction, data in m.metrics.items():
            clat = data.get("clat") or {}
            _insert(
                cur,
                "metrics",
                {
                    "measurement_id": mid,
                    "direction": direction,
                    **{key: data.get(key) for key in METRIC_COLUMNS},
                    **{f"clat_{key}": clat.get(key) for key in ("min_us", "max_us", "samples")},
                },
            )
            cur.executemany(
                "INSERT INTO percentiles (measurement_id, direction, p, us, resolved)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (mid, direction, q["p"], q["us"] if q["resolved"] else None, int(q["resolved"]))
                    for q in clat.get("percentiles", [])
                ],
            )

    def _transition(self, cur: sqlite3.Cursor, t: Transition) -> None:
        totals = t.totals()
        _insert(
            cur,
            "transitions",
            {
                **self._of(t.device, t.test),
                "target": t.target,
                "start": t.start,
                "end": t.end,
                "seconds": t.seconds,
                **{f"bytes_{key}": totals.get(key) for key in ("written", "read", "discarded")},
                "fio_written": totals.get("fio_written"),
                "data": _json(t.as_dict()),
            },
        )

    def test_done(
        self,
        nodeid: str,
        outcome: str,
        duration_s: float,
        message: str | None,
        suite: str | None = None,
    ) -> None:
        """A test's outcome (its phases' durations add up) and the suite it belongs to."""
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO tests (run_id, nodeid, outcome, duration_s, message, suite)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, nodeid) DO UPDATE SET"
                " outcome = excluded.outcome, duration_s = tests.duration_s + excluded.duration_s,"
                " message = coalesce(excluded.message, tests.message),"
                " suite = coalesce(excluded.suite, tests.suite)",
                (self.run_id, nodeid, outcome, duration_s, message, suite),
            )

    def finish(self, outcome: dict[str, int], complete: bool) -> None:
        """Mark the run finished and close the database (also when the mark fails)."""
        try:
            with self._transaction() as cur:
                cur.execute(
                    "UPDATE runs SET end = ?, complete = ?, outcome = ? WHERE id = ?",
                    (iso(time.time()), int(complete), _json(outcome), self.run_id),
                )
        finally:
            self.close()

    def close(self) -> None:
        """Close the connection; what was committed stays (in the WAL when it cannot be merged)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()
