"""Report: rebuild the report of a 2,000-measurement run from the database (``pytest-ssd report``).

A synthetic run is written straight into a fresh database: 2,000 measurements
(an SNIA-IOPS-like matrix of block sizes x read shares x QDs, repeated), each
with full metrics, percentiles and a 600-bin latency histogram, the way the
plugin stores them, and one earlier drive to compare with.  The figure is the
wall time and the size of the page.  Targets: < 15 s and < 30 MB.
Run: ``python -m tests.benchmarks.report [--report-only]``.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_ssd.db import ResultsDb, RunWriter, TestRecords
from pytest_ssd.db.arrays import pack
from pytest_ssd.report.build import report_page
from pytest_ssd.results.record import Measurement, SeriesRecord
from tests.benchmarks.lab import verdict
from tests.unit.db_fixtures import description, metrics

MEASUREMENTS = 2000
TARGET_S, TARGET_MB = 15.0, 30.0
BLOCKS = (512, 4096, 8192, 16384, 32768, 65536, 131072, 1 << 20)
SHARES = (100, 95, 65, 50, 35, 5, 0)
DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def write(db: Path, run_id: str, label: str) -> None:
    writer = RunWriter(db, run_id, db.parent / run_id, {"host": "bench"})
    writer.add_device("d0", description("d0", label, serial=label), label)
    cells = itertools.cycle(itertools.product(BLOCKS, SHARES, DEPTHS))
    rng = np.random.default_rng(1)
    bins = {"ns": np.sort(rng.integers(1_000, 10_000_000, 600)), "count": rng.integers(1, 99, 600)}
    for number in range(MEASUREMENTS):
        bs, share, qd = next(cells)
        name = f"bs{bs}-r{share}-qd{qd}-{number // 504}"
        test = f"suites/esd/test_iops.py::test_cell[d0-{name}]"
        directions = {"read": metrics(1000.0 * qd, bs)} if share else {}
        if share < 100:
            directions["write"] = metrics(800.0 * qd, bs)
        workload = {
            "name": name,
            "pattern": "rnd",
            "block_size": bs,
            "iodepth": qd,
            "numjobs": 1,
            "read_pct": share,
            "ioengine": "libaio",
            "direct": True,
            "fsync": 0,
        }
        m = Measurement(test, "d0", name, workload, directions, "t0", "t1", "artifacts")
        series = (SeriesRecord(device="d0", name=f"{name}.clat-read", meta={}, file=""), pack(bins))
        writer.add(TestRecords(test, measurements=[m], series=[series]))
        writer.test_done(test, "passed", 1.0, None)
    writer.finish({"passed": MEASUREMENTS}, complete=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ssd-report-") as tmp:
        db_path = Path(tmp) / "results.sqlite"
        write(db_path, "earlier", "drive A")
        write(db_path, "bench", "drive B")
        start = time.monotonic()
        with ResultsDb(db_path) as db:
            run = db.run("bench")
            page = report_page(db, run, db.resolve(["drive A"]), Path(tmp) / "figures")
        seconds = time.monotonic() - start
        out = Path(tmp) / "report.html"
        out.write_text(page)
        size_mb = out.stat().st_size / 1e6
    print(f"{MEASUREMENTS} measurements per drive, 2 drives: {page.count('<img')} graphs")
    ok_time, ok_size = seconds < TARGET_S, size_mb < TARGET_MB
    print(verdict("report time", f"{seconds:.1f} s", f"< {TARGET_S:.0f} s", ok_time))
    print(verdict("report size", f"{size_mb:.1f} MB", f"< {TARGET_MB:.0f} MB", ok_size))
    return 0 if (ok_time and ok_size) or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
