"""results.json: the run's record exported from the results database (one store, one schema).

The database is where records go (each test's in one transaction); results.json
is written from it: when the run starts, after tests while that costs little
(at most 8 % of the time since the last export), and when the run ends —
also when it is interrupted.  An export renders each measurement once: they
(most of the file) are only ever added to, so the next export renders the new
ones and writes the file around the text it kept.  A killed run's database
keeps every finished test and ``pytest-ssd export --json RUN`` writes its
results.json.  A write that fails (full or read-only filesystem) is a
:class:`StorageError` and leaves results.json as last written (written whole
through a rename).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pytest_ssd.db.reader import ResultsDb, measurement_of
from pytest_ssd.db.url import DbUrl
from pytest_ssd.documents import loads_json
from pytest_ssd.results.files import storage_error, write_atomic
from pytest_ssd.results.record import verdict_order

#: results.json's own schema version (docs/results-json.md)
RESULTS_SCHEMA = 1
#: an export after a test may take at most this share of the time since the last one
#: (under the tenth the benchmark holds it to: each export is a little bigger than the last)
EXPORT_SHARE = 0.08


def results_json(db: ResultsDb, run_id: str, *, measurements: bool = True) -> dict[str, Any]:
    """Run *run_id* as results.json has it: the run, devices, transitions, records, verdicts.

    Without *measurements* their list is left empty (:class:`ResultsExport` keeps them).
    """
    run = db.run(run_id)
    where, key = "WHERE run_id = ? ORDER BY id", (run_id,)
    conn = db.conn
    devices = conn.execute(
        f"SELECT dut_id, description FROM run_devices WHERE run_id = ? ORDER BY {conn.order}", key
    )
    derived = conn.execute(f'SELECT dut_id, test, name, "values" FROM derived {where}', key)
    verdicts = [
        loads_json(r["row"]) for r in conn.execute(f'SELECT "row" FROM verdicts {where}', key)
    ]
    return {
        "schema": RESULTS_SCHEMA,
        "run": {
            "id": run.id,
            "start": run.start,
            "end": run.end,
            "complete": run.complete,
            "outcome": run.outcome,
            **run.environment,
        },
        "devices": {r["dut_id"]: loads_json(r["description"]) for r in devices},
        "transitions": [
            loads_json(r["data"])
            for r in conn.execute(f"SELECT data FROM transitions {where}", key)
        ],
        "measurements": [
            measurement_of(r).as_dict()
            for r in conn.execute(f"SELECT * FROM measurements {where}", key)
        ]
        if measurements
        else [],
        "derived": [
            {
                "test": r["test"],
                "device": r["dut_id"],
                "name": r["name"],
                "values": loads_json(r["values"]),
            }
            for r in derived
        ],
        "conformance": sorted(verdicts, key=lambda row: verdict_order(row["verdict"])),
    }


#: where the measurements go in the text of the rest (a string no record holds: NUL)
_PLACE = json.dumps(["\0measurements"], indent=1).replace("\n", "\n ")


class ResultsExport:
    """The run's ``results.json``, exported from the database as the run goes."""

    def __init__(self, run_dir: Path, db_path: Path | str | DbUrl, run_id: str) -> None:
        self.path = run_dir / "results.json"
        self.db_path = db_path
        self.run_id = run_id
        self._last = 0.0
        self._cost = 0.0
        #: each measurement exported so far, as ``json.dumps(indent=1)`` puts it in the file
        self._rendered: list[str] = []
        self._last_id = 0

    def write(self) -> None:
        """Export now; :class:`StorageError` (results.json unchanged) when that fails."""
        started = time.monotonic()
        with ResultsDb(self.db_path) as db:
            data = results_json(db, self.run_id, measurements=False)
            rows = db.conn.execute(
                "SELECT * FROM measurements WHERE run_id = ? AND id > ? ORDER BY id",
                (self.run_id, self._last_id),
            ).fetchall()
        for row in rows:
            # its fields are JSON already: no deep copy (as_dict) to dump them
            text = json.dumps(vars(measurement_of(row)), indent=1)
            self._rendered.append("  " + text.replace("\n", "\n  "))
            self._last_id = row["id"]
        data["measurements"] = ["\0measurements"]
        listed = "[\n" + ",\n".join(self._rendered) + "\n ]" if self._rendered else "[]"
        text = json.dumps(data, indent=1).replace(_PLACE, listed, 1) + "\n"
        try:
            write_atomic(self.path, text)
        except OSError as exc:
            raise storage_error(self.path, exc, "--ssd-report-dir") from None
        self._last = time.monotonic()
        self._cost = self._last - started

    def checkpoint(self) -> None:
        """Export unless that would spend over :data:`EXPORT_SHARE` of the time since the last."""
        if self._cost <= EXPORT_SHARE * (time.monotonic() - self._last):
            self.write()
