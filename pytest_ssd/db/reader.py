"""Reading the results database: runs, labels, a drive's results, what to compare with."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from pytest_ssd.db.arrays import unpack
from pytest_ssd.db.conn import Row
from pytest_ssd.db.faults import database_error
from pytest_ssd.db.model import DriveRef, DriveResults, RunInfo, Series
from pytest_ssd.db.opening import open_reader
from pytest_ssd.db.url import DbUrl, db_url
from pytest_ssd.documents import loads_json
from pytest_ssd.errors import DatabaseError
from pytest_ssd.results.record import Derived, Measurement

#: ``--ssd-compare=all``: every other labelled drive with results for the same tests
ALL = "all"


class ResultsDb:
    """Read access to the results database (readers never block the writing controller).

    The connection is read-only (:func:`~pytest_ssd.db.opening.open_reader`): a
    reader never migrates or writes the database, whatever its schema.

    Used as a context manager, an SQLite error inside the ``with`` block (a
    damaged page, a failing disk) or a record whose JSON cannot be read back
    leaves it as a one-line :class:`DatabaseError` naming the database.
    """

    def __init__(self, target: Path | str | DbUrl) -> None:
        self.url = db_url(target)
        #: the database as messages name it (a path, or a URL without its password)
        self.path = str(self.url)
        self.conn = open_reader(self.url)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ResultsDb:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
        if isinstance(exc, sqlite3.Error):
            raise database_error(self.url.file, exc) from None
        if isinstance(exc, json.JSONDecodeError):  # a record's JSON damaged (or absurdly nested)
            raise DatabaseError(
                f"{self.path}: a stored record is not readable JSON ({exc.msg}):"
                " the file was changed outside pytest-ssd; move it aside"
            ) from None

    def runs(self) -> list[RunInfo]:
        """Every run, newest first."""
        rows = self.conn.execute("SELECT * FROM runs ORDER BY start DESC, id DESC").fetchall()
        return [self._run(row) for row in rows]

    def has_run(self, run_id: str) -> bool:
        """Whether the database holds run *run_id*."""
        row = self.conn.execute("SELECT id FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row is not None

    def run(self, run_id: str) -> RunInfo:
        """The run *run_id* (``latest`` for the newest); DatabaseError when there is none."""
        if run_id == "latest":
            row = self.conn.execute("SELECT * FROM runs ORDER BY start DESC LIMIT 1").fetchone()
        else:
            row = self.conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise DatabaseError(f"{self.path}: no run {run_id!r} (pytest-ssd list shows the runs)")
        return self._run(row)

    def _run(self, row: Row) -> RunInfo:
        drives = self.conn.execute(
            f"SELECT * FROM run_devices WHERE run_id = ? ORDER BY {self.conn.order}", (row["id"],)
        ).fetchall()
        return RunInfo(
            id=row["id"],
            start=row["start"],
            end=row["end"],
            complete=bool(row["complete"]),
            outcome=loads_json(row["outcome"] or "{}"),
            run_dir=row["run_dir"],
            environment=loads_json(row["environment"]),
            drives=tuple(_drive(d) for d in drives),
        )

    def labels(self) -> list[tuple[str, int, str]]:
        """(label, number of runs, newest run id) for every label, newest first."""
        rows = self.conn.execute(
            "SELECT d.label, count(DISTINCT d.run_id) AS n, max(r.start) AS last,"
            " (SELECT d2.run_id FROM run_devices d2 JOIN runs r2 ON r2.id = d2.run_id"
            "  WHERE d2.label = d.label ORDER BY r2.start DESC LIMIT 1) AS newest"
            " FROM run_devices d JOIN runs r ON r.id = d.run_id GROUP BY d.label ORDER BY last DESC"
        ).fetchall()
        return [(r["label"], r["n"], r["newest"]) for r in rows]

    def derived_named(self, run_id: str, name: str) -> list[Derived]:
        """Every derived record *name* of run *run_id*, each drive's, in the order made
        (``qualification``: the checks ``pytest-ssd list`` counts)."""
        rows = self.conn.execute(
            'SELECT dut_id, test, "values" FROM derived WHERE run_id = ? AND name = ? ORDER BY id',
            (run_id, name),
        )
        return [
            Derived(test=r["test"], device=r["dut_id"], name=name, values=loads_json(r["values"]))
            for r in rows
        ]

    def results(self, drive: DriveRef, *, series: bool = True) -> DriveResults:
        """What *drive* measured in its run (with its arrays unless *series* is False)."""
        key = (drive.run_id, drive.dut_id)
        where = "WHERE run_id = ? AND dut_id = ? ORDER BY id"
        found = DriveResults(drive)
        for row in self.conn.execute(f"SELECT * FROM measurements {where}", key):
            found.measurements.append(measurement_of(row))
        for row in self.conn.execute(f"SELECT * FROM derived {where}", key):
            values = loads_json(row["values"])
            found.derived.append(
                Derived(test=row["test"], device=drive.dut_id, name=row["name"], values=values)
            )
        for row in self.conn.execute(f'SELECT "row" FROM verdicts {where}', key):
            found.verdicts.append(loads_json(row["row"]))
        for row in self.conn.execute(f"SELECT data FROM transitions {where}", key):
            found.transitions.append(loads_json(row["data"]))
        if series:
            for row in self.conn.execute(
                f"SELECT test, name, meta, arrays FROM series {where}", key
            ):
                meta = loads_json(row["meta"])
                found.series.append(Series(row["test"], row["name"], meta, unpack(row["arrays"])))
        tests = self.conn.execute(
            "SELECT nodeid, outcome, suite FROM tests WHERE run_id = ? ORDER BY id",
            (drive.run_id,),
        ).fetchall()
        found.tests = {r["nodeid"]: r["outcome"] for r in tests}
        found.suites = {r["nodeid"]: r["suite"] for r in tests if r["suite"]}
        return found

    def resolve(self, refs: Sequence[str], *, exclude_run: str | None = None) -> list[DriveRef]:
        """The drives named by labels, run ids or ``all``; each label's newest run.

        Drives of *exclude_run* (the run being reported) are left out; a name
        that is neither a run nor a label is a :class:`DatabaseError`.
        """
        chosen: dict[tuple[str, str], DriveRef] = {}
        for ref in refs:
            for drive in self._resolve_one(ref, exclude_run):
                chosen.setdefault((drive.run_id, drive.dut_id), drive)
        return list(chosen.values())

    def _resolve_one(self, ref: str, exclude_run: str | None) -> list[DriveRef]:
        if ref == ALL:
            drives = [self._newest(label, exclude_run) for label, _, _ in self.labels()]
            return [d for d in drives if d is not None]
        if self.has_run(ref):
            return [] if ref == exclude_run else list(self.run(ref).drives)
        drive = self._newest(ref, exclude_run)
        if drive is None:
            known = ", ".join(repr(label) for label, _, _ in self.labels()[:10]) or "none yet"
            raise DatabaseError(
                f"{self.path}: no run or label {ref!r} to compare with (labels: {known})"
            )
        return [drive]

    def _newest(self, label: str, exclude_run: str | None) -> DriveRef | None:
        """The newest run's drive labelled *label* that measured something."""
        row = self.conn.execute(
            "SELECT d.* FROM run_devices d JOIN runs r ON r.id = d.run_id"
            " WHERE d.label = ? AND d.run_id <> coalesce(?, '')"
            " AND EXISTS (SELECT 1 FROM measurements m"
            "  WHERE m.run_id = d.run_id AND m.dut_id = d.dut_id)"
            " ORDER BY r.start DESC LIMIT 1",
            (label, exclude_run),
        ).fetchone()
        return None if row is None else _drive(row)

    def table(self, name: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A table's column names and rows, for exports."""
        cur = self.conn.execute(
            f"SELECT * FROM {name}"
        )  # names from a fixed list, never user input
        return [c[0] for c in cur.description], [tuple(r) for r in cur.fetchall()]


def _drive(row: Row) -> DriveRef:
    return DriveRef(
        row["run_id"],
        row["dut_id"],
        row["label"],
        bool(row["scratch"]),
        loads_json(row["description"]),
        row["build"],
    )


def measurement_of(row: Row) -> Measurement:
    """A ``measurements`` row as the record it was written from."""
    return Measurement(
        test=row["test"],
        device=row["dut_id"],
        name=row["name"],
        workload=loads_json(row["workload"]),
        metrics=loads_json(row["metrics"]),
        start=row["start"],
        end=row["end"],
        artifacts=row["artifacts"],
    )
