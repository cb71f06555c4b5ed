"""The controller's writer: one run into the results database, a transaction per test.

A write that fails (disk full, read-only, damaged file) rolls back its own
transaction only and raises a one-line :class:`DatabaseError`; every test
committed before stays readable.
"""

from __future__ import annotations

import json
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

from pytest_ssd.db.conn import Conn
from pytest_ssd.db.faults import database_error
from pytest_ssd.db.model import shared_test_id
from pytest_ssd.db.opening import open_writer
from pytest_ssd.db.schema import intact
from pytest_ssd.db.unfinished import forget_unfinished, last_seq
from pytest_ssd.db.url import DbUrl, db_url
from pytest_ssd.results.history import (
    PROFILE_KEY,
    STATE_KEY,
    SeriesIdentity,
    host_class,
    point_of,
)
from pytest_ssd.results.record import Derived, Measurement, SeriesRecord, iso
from pytest_ssd.results.transition import Transition

#: workload fields kept as columns of ``measurements`` (the whole job is in ``workload``)
WORKLOAD_COLUMNS = ("pattern", "block_size", "iodepth", "numjobs", "read_pct")
#: per-direction figures kept as columns of ``metrics``
METRIC_COLUMNS = ("iops", "bw_mib_s", "bw_mb_s", "io_bytes", "runtime_s", "lat_mean_us")
_KEEP = "ON CONFLICT (key) DO NOTHING"
#: a row of a run already there (loaded before: a retry, a sync) is left as it is
_ONCE = "ON CONFLICT (run_id, seq) DO NOTHING"


@dataclass(frozen=True)
class TestDone:
    """A test phase's outcome (its phases' durations add up) and the suite it belongs to."""

    __test__ = False

    nodeid: str
    outcome: str
    duration_s: float
    message: str | None
    suite: str | None = None


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
    #: the outcome of the phase that brought them, stored in the same transaction
    done: TestDone | None = None

    def __bool__(self) -> bool:
        records = (self.measurements, self.derived, self.verdicts, self.transitions, self.series)
        return self.done is not None or any(records)


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def insert(conn: Conn, table: str, row: dict[str, Any], tail: str = "") -> int | None:
    """INSERT *row* (column -> value) into *table*; the new row's id (None: none was added).

    *tail* (ON CONFLICT ...) ends with ``RETURNING id`` where the id is wanted.
    """
    names = ", ".join(f'"{name}"' for name in row)
    marks = ", ".join("?" for _ in row)
    found = conn.execute(
        f"INSERT INTO {table} ({names}) VALUES ({marks}) {tail}", tuple(row.values())
    )
    if "RETURNING" not in tail:
        return None
    added = found.fetchall()  # all: SQLite finishes the statement only then
    return int(added[0][0]) if added else None


def _of_measurement(table: str, columns: list[str]) -> str:
    """INSERT of a row of *table* that belongs to the measurement (run_id, seq) given last."""
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    return (
        f"INSERT INTO {table} (measurement_id, {names}) SELECT id, {marks} FROM measurements"
        " WHERE run_id = ? AND seq = ? ON CONFLICT DO NOTHING"
    )


#: a row of percentiles' values, typed: a server reads NULL as text otherwise
_PERCENTILE_ROW = "(CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), CAST(? AS INTEGER))"


@cache
def _percentiles(rows: int) -> str:
    """INSERT of a direction's *rows* percentiles of the measurement (run_id, seq) given last,
    in one statement (a server gets one message, not one per percentile)."""
    values = ", ".join([_PERCENTILE_ROW] * rows)
    return (
        "INSERT INTO percentiles (measurement_id, direction, p, us, resolved)"
        f" SELECT m.id, ?, v.column1, v.column2, v.column3 FROM (VALUES {values}) AS v,"
        " measurements m WHERE m.run_id = ? AND m.seq = ? ON CONFLICT DO NOTHING"
    )


class RunRecords(ABC):
    """Where a session records its run: :class:`RunWriter`, or a lab's server with its spool
    (:class:`pytest_ssd.db.lab.LabWriter`)."""

    run_id: str

    @property
    def notes(self) -> tuple[str, ...]:
        """What the user should know about where the run was recorded (nothing: it is all
        in :attr:`local`)."""
        return ()

    @property
    @abstractmethod
    def local(self) -> DbUrl:
        """The database results.json is exported from."""

    @property
    @abstractmethod
    def source(self) -> DbUrl:
        """The database the run's report reads."""

    @abstractmethod
    def add_device(self, dut_id: str, description: dict[str, Any], label: str) -> None:
        """A device under test of the run (its identity and label)."""

    @abstractmethod
    def add(self, records: TestRecords) -> None:
        """What one test report brought, in one transaction."""

    @abstractmethod
    def forget_unfinished(self) -> list[str]:
        """Delete the records of the run's tests without an outcome (cut short); those tests."""

    def test_done(
        self,
        nodeid: str,
        outcome: str,
        duration_s: float,
        message: str | None,
        suite: str | None = None,
    ) -> None:
        """A test's outcome (its phases' durations add up) and the suite it belongs to."""
        self.add(TestRecords(nodeid, done=TestDone(nodeid, outcome, duration_s, message, suite)))

    @abstractmethod
    def finish(self, outcome: dict[str, int], complete: bool, end: str | None = None) -> None:
        """Mark the run finished and close (also when the mark fails)."""

    @abstractmethod
    def close(self) -> None:
        """Close; what was committed stays."""


class RunWriter(RunRecords):
    """Writes one run; every method commits, so a killed run keeps what was written.

    Each row of the run gets the writer's number for it (``seq``): the same
    record written again (a retried transaction, ``pytest-ssd sync``) adds nothing.
    """

    def __init__(
        self,
        target: Path | str | DbUrl,
        run_id: str,
        run_dir: Path,
        environment: dict[str, Any],
        start: str | None = None,
    ):
        self.url = db_url(target)
        self.path = str(self.url)
        self.run_id = run_id
        self._seq = 0
        self._environment = environment
        #: dut id -> its identity (model, size, firmware, serial) and test host, for series
        self._drives: dict[str, dict[str, Any]] = {}
        #: series keys this writer's committed transactions hold (no INSERT for them again)
        self._keys: set[str] = set()
        self.conn = open_writer(self.url)
        try:
            self._check_intact()
            with self._transaction() as conn:
                host_id = self._host(conn, environment)
                row = {
                    "id": run_id,
                    "host_id": host_id,
                    "start": start or iso(time.time()),
                    "run_dir": str(run_dir),
                    "environment": _json(environment),
                }
                insert(conn, "runs", row, "ON CONFLICT (id) DO NOTHING")
                # a run resumed (--ssd-resume) goes on after its last row: none is lost
                self._seq = last_seq(conn, run_id)
        except BaseException:
            self.conn.close()
            raise

    @property
    def local(self) -> DbUrl:
        """The database results.json is exported from: this one."""
        return self.url

    @property
    def source(self) -> DbUrl:
        """The database the run's report reads: this one."""
        return self.url

    def _check_intact(self) -> None:
        """Refuse to add a run to a damaged file: writing into it could spread the damage."""
        if self.url.path is None:  # a server keeps its own pages
            return
        intact(self.conn.raw, self.url.path)

    @contextmanager
    def _transaction(self) -> Iterator[Conn]:
        """One transaction; a failure rolls back this one only and becomes a DatabaseError."""
        try:
            with self.conn.transaction():
                yield self.conn
        except sqlite3.Error as exc:
            raise database_error(self.url.file, exc) from None

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    @staticmethod
    def _host(conn: Conn, env: dict[str, Any]) -> int:
        values = [env.get(k) for k in ("host", "kernel", "machine", "cpu", "cpus")]
        key = "|".join(str(v) for v in values)
        columns = ("hostname", "kernel", "machine", "cpu", "cpus")
        insert(conn, "hosts", {"key": key, **dict(zip(columns, values, strict=True))}, _KEEP)
        return int(conn.execute("SELECT id FROM hosts WHERE key = ?", (key,)).fetchone()[0])

    def add_device(self, dut_id: str, description: dict[str, Any], label: str) -> None:
        """A device of this run: its identity (shared across runs) and its label here."""
        ident = description["identity"]
        self._drives[dut_id] = {**ident, "test_host": description.get("host")}
        if ident.get("serial"):
            key = f"{ident.get('model')}|{ident['serial']}|{ident.get('firmware')}"
        else:  # scratch files and loop devices: one device per run
            key = f"{self.run_id}|{dut_id}|{ident.get('path')}|{ident.get('size_bytes')}"
        with self._transaction() as conn:
            columns = ("model", "serial", "firmware", "size_bytes", "transport")
            row = {"key": key, **{c: ident.get(c) for c in columns}, "identity": _json(ident)}
            insert(conn, "devices", row, _KEEP)
            device_id = conn.execute("SELECT id FROM devices WHERE key = ?", (key,)).fetchone()[0]
            insert(
                conn,
                "run_devices",
                {
                    "run_id": self.run_id,
                    "seq": self._next(),
                    "dut_id": dut_id,
                    "device_id": device_id,
                    "label": label,
                    "path": description.get("path"),
                    "scratch": int(bool(description.get("scratch"))),
                    "datasheet": description.get("datasheet"),
                    "description": _json(description),
                    "host": description.get("host"),
                    # a description without one (before --ssd-build): its firmware, as
                    # schema 6 sets the runs before it
                    "build": description.get("build", ident.get("firmware")),
                },
                "ON CONFLICT (run_id, dut_id) DO NOTHING",
            )

    def add(self, records: TestRecords) -> None:
        """Everything one test report brought, and its outcome, in one transaction."""
        if not records:
            return
        added: set[str] = set()
        with self._transaction() as conn:
            for m in records.measurements:
                self._measurement(conn, m, added)
            for t in records.transitions:
                self._transition(conn, t)
            for d in records.derived:
                row = {**self._of(d.device, d.test), "name": d.name, "values": _json(d.values)}
                insert(conn, "derived", row, _ONCE)
            for v in records.verdicts:
                insert(
                    conn,
                    "verdicts",
                    {
                        **self._of(v["device"], v["test"]),
                        "datasheet": v.get("datasheet"),
                        "line": v["id"],
                        "verdict": v["verdict"],
                        "ratio": v.get("ratio"),
                        "row": _json(v),
                    },
                    _ONCE,
                )
            for s, blob in records.series:
                row = {**self._of(s.device, records.nodeid), "name": s.name, "meta": _json(s.meta)}
                insert(conn, "series", {**row, "arrays": blob}, _ONCE)
            if records.done is not None:
                self._done(conn, records.done)
        self._keys |= added  # committed: the next tests' measurements need not add them

    def _series(self, conn: Conn, m: Measurement, added: set[str]) -> dict[str, Any]:
        """The columns of *m*'s series (its key, firmware and serial); the series added once."""
        drive = self._drives.get(m.device, {})
        ident = SeriesIdentity(
            model=drive.get("model"),
            size_bytes=drive.get("size_bytes"),
            point=point_of(shared_test_id(m.test, m.device), m.name),
            state=m.workload.get(STATE_KEY),
            profile=m.workload.get(PROFILE_KEY),
            host_class=host_class(self._environment, drive.get("test_host")),
        )
        key = ident.key
        if key not in self._keys and key not in added:
            insert(conn, "series_keys", {"key": key, **ident.as_dict()}, _KEEP)
            added.add(key)
        return {"series_key": key, "firmware": drive.get("firmware"), "serial": drive.get("serial")}

    def _of(self, dut_id: str, test: str) -> dict[str, Any]:
        """The columns that say whose a row is, and its number in the run."""
        return {"run_id": self.run_id, "seq": self._next(), "dut_id": dut_id, "test": test}

    def _measurement(self, conn: Conn, m: Measurement, added: set[str]) -> None:
        """A measurement, its metrics and percentiles: they find its row by (run, seq).

        No id is read back, so a server gets the whole test in one round trip (a pipeline);
        a measurement loaded before keeps its rows (each table's key leaves them as they are).
        """
        shape = {key: m.workload.get(key) for key in WORKLOAD_COLUMNS}
        row = {
            **self._of(m.device, m.test),
            "name": m.name,
            **shape,
            "start": m.start,
            "end": m.end,
            "artifacts": m.artifacts,
            "workload": _json(m.workload),
            "metrics": _json(m.metrics),
            **self._series(conn, m, added),
        }
        insert(conn, "measurements", row, _ONCE)
        mine = (self.run_id, row["seq"])
        for direction, data in m.metrics.items():
            clat = data.get("clat") or {}
            figures = {
                "direction": direction,
                **{key: data.get(key) for key in METRIC_COLUMNS},
                **{f"clat_{key}": clat.get(key) for key in ("min_us", "max_us", "samples")},
            }
            conn.execute(_of_measurement("metrics", list(figures)), (*figures.values(), *mine))
            percentiles = clat.get("percentiles", [])
            if percentiles:
                values = [
                    (q["p"], q["us"] if q["resolved"] else None, int(q["resolved"]))
                    for q in percentiles
                ]
                conn.execute(_percentiles(len(values)), (direction, *chain(*values), *mine))

    def _transition(self, conn: Conn, t: Transition) -> None:
        totals = t.totals()
        insert(
            conn,
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
            _ONCE,
        )

    def forget_unfinished(self) -> list[str]:
        """Delete the records of the run's tests without an outcome (cut short); those tests."""
        with self._transaction() as conn:
            return forget_unfinished(conn, self.run_id)

    def _done(self, conn: Conn, done: TestDone) -> None:
        conn.execute(
            "INSERT INTO tests (run_id, nodeid, outcome, duration_s, message, suite)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, nodeid) DO UPDATE SET"
            " outcome = excluded.outcome, duration_s = tests.duration_s + excluded.duration_s,"
            " message = coalesce(excluded.message, tests.message),"
            " suite = coalesce(excluded.suite, tests.suite)",
            (self.run_id, done.nodeid, done.outcome, done.duration_s, done.message, done.suite),
        )

    def finish(self, outcome: dict[str, int], complete: bool, end: str | None = None) -> None:
        """Mark the run finished and close the database (also when the mark fails)."""
        try:
            with self._transaction() as conn:
                conn.durable()  # every commit of the run before it is kept with this one
                conn.execute(
                    'UPDATE runs SET "end" = ?, complete = ?, outcome = ? WHERE id = ?',
                    (end or iso(time.time()), int(complete), _json(outcome), self.run_id),
                )
        finally:
            self.close()

    def close(self) -> None:
        """Close the connection; what was committed stays (in the WAL when it cannot be merged)."""
        self.conn.close()
