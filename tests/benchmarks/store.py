"""One store: the cost of keeping results.json while a run records 1,000 measurements.

Before (issue 16 item 6): results.json rewritten whole after every record, beside
the database: quadratic.  Now: each record goes to the database (one
transaction), results.json is exported from it after a record only while that
costs at most a tenth of the time since the last export, and once at the end.
A record every 20 ms (a fast run's pace); target: the exports take at most
10 % of the run's time.  Run: ``python -m tests.benchmarks.store``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from pytest_ssd.db import RunWriter, TestRecords
from pytest_ssd.db.export import ResultsExport
from pytest_ssd.results.files import write_atomic
from tests.unit.db_fixtures import CORNERS, corner, description

RECORDS = 1000
PACE_S = 0.02
TARGET = 0.10


def old_way(folder: Path) -> float:
    """Seconds spent rewriting results.json after each of RECORDS records."""
    data: dict[str, list[object]] = {"measurements": []}
    spent = 0.0
    for n in range(RECORDS):
        data["measurements"].append(corner("d0", CORNERS[n % 4], 1000.0 + n).as_dict())
        started = time.monotonic()
        write_atomic(folder / "results.json", json.dumps(data, indent=1) + "\n")
        spent += time.monotonic() - started
    return spent


def new_way(folder: Path) -> tuple[float, float, float]:
    """(seconds in database writes, in results.json exports, in all) for RECORDS records."""
    db_path = folder / "results.sqlite"
    writer = RunWriter(db_path, "run-1", folder, {"host": "lab"})
    writer.add_device("d0", description("d0", "drive"), "drive")
    export = ResultsExport(folder, db_path, "run-1")
    in_db = in_export = 0.0
    begun = time.monotonic()
    for n in range(RECORDS):
        m = corner("d0", CORNERS[n % 4], 1000.0 + n)
        m = type(m)(**{**m.as_dict(), "test": f"{m.test}-{n}"})
        started = time.monotonic()
        writer.add(TestRecords(m.test, measurements=[m]))
        writer.test_done(m.test, "passed", PACE_S, None)
        in_db += time.monotonic() - started
        time.sleep(PACE_S)  # the test's own time
        started = time.monotonic()
        export.checkpoint()
        in_export += time.monotonic() - started
    started = time.monotonic()
    writer.finish({"passed": RECORDS}, complete=True)
    export.write()
    in_export += time.monotonic() - started
    writer.close()
    return in_db, in_export, time.monotonic() - begun


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        old = old_way(Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        in_db, in_export, wall = new_way(Path(tmp))
    share = in_export / wall
    print(f"results.json rewritten per record (before): {old:.2f} s for {RECORDS} records")
    print(f"database writes: {in_db:.2f} s; results.json exports: {in_export:.2f} s")
    print(f"results.json exports: {share:.1%} of the run's {wall:.1f} s (target <= {TARGET:.0%})")
    return 0 if share <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
