"""``pytest-ssd history`` on a lab-sized database: 100,000 measurements, each with its histogram.

100 runs of one drive each (4 models, 5 firmware builds, 25 drives), 1,000 test
points a run, written through the run writer (as sessions write them) into
SQLite and, when a server can be started, PostgreSQL.  Timed (best of three):
listing the series of a point, one series' table (its runs' histograms pooled),
and the table with its graph (-o, PNG).  Target: each under a second.

Run: ``python -m tests.benchmarks.history`` (as root for PostgreSQL).
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_ssd.cli import main
from pytest_ssd.db import ResultsDb, RunWriter, TestRecords
from pytest_ssd.db.arrays import pack
from pytest_ssd.db.history import find_series
from pytest_ssd.results.record import Measurement, SeriesRecord
from tests.pgserver import available, local_postgres
from tests.unit.db_fixtures import CORNERS, corner, description

RUNS = 100
POINTS = 1000
PER_TEST = 10
TARGET_S = 1.0
MODELS = ("Model A", "Model B", "Model C", "Model D")
#: a histogram of 40 buckets (a quick run's is about as wide)
BINS = pack({"ns": [50_000 + 1024 * n for n in range(40)], "count": [5 + n % 7 for n in range(40)]})


def _measurement(run: int, point: int) -> Measurement:
    m = corner("d0", CORNERS[point % 4], 1000.0 + run + point)
    test = f"suites/lab/test_points.py::test_point[d0-p{point:04d}]"
    workload = {**m.workload, "state": "sustained", "profile": "quick"}
    return Measurement(**{**m.as_dict(), "test": test, "workload": workload})


def fill(target: Path | str) -> float:
    """RUNS runs of POINTS measurements written into *target*; the seconds it took."""
    started = time.perf_counter()
    for run in range(RUNS):
        drive = description("d0", f"drive {run % 25}", f"SN{run % 25:04d}")
        ident = drive["identity"]
        ident.update(model=MODELS[run % 4], firmware=f"FW{run // 20}")
        start = f"2026-{1 + run // 28:02d}-{1 + run % 28:02d}T10:00:00"
        writer = RunWriter(target, f"run-{run:03d}", Path("/lab") / str(run), {"cpu": "X"}, start)
        writer.add_device("d0", drive, drive["label"])
        for first in range(0, POINTS, PER_TEST):
            ms = [_measurement(run, p) for p in range(first, first + PER_TEST)]
            series = [
                (SeriesRecord(device="d0", name=f"{m.name}.clat-read", meta={}, file=""), BINS)
                for m in ms
            ]
            writer.add(TestRecords(ms[0].test, measurements=ms, series=series))
        writer.finish({"passed": POINTS}, complete=True)
    return time.perf_counter() - started


def best(action: Callable[[], None], times: int = 3) -> float:
    found = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        action()
        found = min(found, time.perf_counter() - started)
    return found


def _quiet(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0, argv


def measure(target: Path | str, name: str, folder: Path) -> bool:
    wrote = fill(target)
    with ResultsDb(target) as db:
        count = db.conn.execute("SELECT count(*) FROM measurements").fetchone()[0]
        key = find_series(db.conn, point="p0500", model="model b")[0].key
    db_arg = f"--db={target}"
    listing = best(lambda: _quiet(["history", db_arg, "--point", "p0500"]))
    one = best(lambda: _quiet(["history", db_arg, "--series", key]))
    graph = best(lambda: _quiet(["history", db_arg, "--series", key, "-o", str(folder / "h.png")]))
    print(
        f"{name}: {count:,} measurements written in {wrote:.0f} s; history: the point's series"
        f" listed {listing:.2f} s, one series' table {one:.2f} s, with its graph {graph:.2f} s"
        f" (target < {TARGET_S:.0f} s each)"
    )
    return max(listing, one, graph) < TARGET_S


def main_() -> int:
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ok &= measure(folder / "lab.sqlite", "SQLite", folder)
        reason = available()
        if reason is not None:
            print(f"PostgreSQL skipped: {reason}")
        else:
            with local_postgres() as pg:
                ok &= measure(pg.create_database("history"), "PostgreSQL", folder)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main_())
