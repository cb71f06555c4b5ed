"""results.json: the run's record exported from the results database (one store, one schema).

The database is where records go (each test's in one transaction); results.json
is written from it: when the run starts, after tests while that costs little
(at most 8 % of the time since the last export), and when the run ends —
also when it is interrupted.  A killed run's database keeps every finished
test and ``pytest-ssd export --json RUN`` writes its results.json.  A write
that fails (full or read-only filesystem) is a :class:`StorageError` and
leaves results.json as last written (written whole through a rename).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pytest_ssd.db.reader import ResultsDb, measurement_of
from pytest_ssd.results.files import storage_error, write_atomic
from pytest_ssd.results.record import verdict_order

#: results.json's own schema version (README: "results.json (schema 1)")
RESULTS_SCHEMA = 1
#: an export after a test may take at most this share of the time since the last one
#: (under the tenth the benchmark holds it to: each export is a little bigger than the last)
EXPORT_SHARE = 0.08


def results_json(db: ResultsDb, run_id: str) -> dict[str, Any]:
    """Run *run_id* as results.json has it: the run, devices, transitions, records, verdicts."""
    run = db.run(run_id)
    where, key = "WHERE run_id = ? ORDER BY id", (run_id,)
    conn = db.conn
    devices = conn.execute(
        "SELECT dut_id, description FROM run_devices WHERE run_id = ? ORDER BY rowid", key
    )
    derived = conn.execute(f'SELECT dut_id, test, name, "values" FROM derived {where}', key)
    verdicts = [
        json.loads(r["row"]) for r in conn.execute(f"SELECT row FROM verdicts {where}", key)
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
        "devices": {r["dut_id"]: json.loads(r["description"]) for r in devices},
        "transitions": [
            json.loads(r["data"])
            for r in conn.execute(f"SELECT data FROM transitions {where}", key)
        ],
        "measurements": [
            measurement_of(r).as_dict()
            for r in conn.execute(f"SELECT * FROM measurements {where}", key)
        ],
        "derived": [
            {
                "test": r["test"],
                "device": r["dut_id"],
                "name": r["name"],
                "values": json.loads(r["values"]),
            }
            for r in derived
        ],
        "conformance": sorted(verdicts, key=lambda row: verdict_order(row["verdict"])),
    }


def write_results(db_path: Path, run_id: str, path: Path) -> None:
    """Export run *run_id* of the database at *db_path* to *path* (written whole)."""
    with ResultsDb(db_path) as db:
        text = json.dumps(results_json(db, run_id), indent=1) + "\n"
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise storage_error(path, exc, "--ssd-report-dir") from None


class ResultsExport:
    """The run's ``results.json``, exported from the database as the run goes."""

    def __init__(self, run_dir: Path, db_path: Path, run_id: str) -> None:
        self.path = run_dir / "results.json"
        self.db_path = db_path
        self.run_id = run_id
        self._last = 0.0
        self._cost = 0.0

    def write(self) -> None:
        """Export now; :class:`StorageError` (results.json unchanged) when that fails."""
        started = time.monotonic()
        write_results(self.db_path, self.run_id, self.path)
        self._last = time.monotonic()
        self._cost = self._last - started

    def checkpoint(self) -> None:
        """Export unless that would spend over :data:`EXPORT_SHARE` of the time since the last."""
        if self._cost <= EXPORT_SHARE * (time.monotonic() - self._last):
            self.write()
