"""``pytest-ssd site`` on a lab-sized database: 100,000 measurements, 100 series × 200 builds.

200 runs of one drive (one a firmware build), 100 test points a run, each measured 5 times
(``--ssd-repeat``'s repeats), written through the run writer (as sessions write them) into
SQLite and, when a server can be started, PostgreSQL; a tenth of the series halve their
IOPS from build 150 on (steps to find). Timed: the whole site into an empty folder, then,
after one more run, the rebuild into the same folder (what a lab's CI does after each run).
Targets (docs/site.md, "Publishing from CI"): the whole site under 60 s, the rebuild after a
run under 30 s.

Run: ``python -m tests.benchmarks.site`` (as root for PostgreSQL).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path

from pytest_ssd.db import ResultsDb, RunWriter, TestRecords
from pytest_ssd.results.record import Measurement
from tests.benchmarks.history import _quiet
from tests.pgserver import available, local_postgres
from tests.unit.db_fixtures import CORNERS, corner, description

BUILDS = 200
POINTS = 100
REPEATS = 5
#: the series whose level halves at this build (every tenth)
STEP_AT = 150
FULL_TARGET_S = 60.0
REBUILD_TARGET_S = 30.0


def _measurement(build: int, point: int, repeat: int) -> Measurement:
    level = 0.5 if point % 10 == 0 and build >= STEP_AT else 1.0
    noise = 1 + 0.02 * (((build * 7 + point * 13 + repeat * 29) % 11) - 5) / 5
    m = corner("d0", CORNERS[point % 4], 50_000.0 * level * noise)
    test = f"suites/lab/test_points.py::test_point[d0-p{point:03d}]"
    workload = {**m.workload, "state": "sustained", "profile": "quick", "repeat": repeat + 1}
    return Measurement(**{**m.as_dict(), "test": test, "workload": workload})


def write_run(target: Path | str, build: int) -> None:
    """The run of build *build*: every point, every repeat."""
    drive = description("d0", "lab drive", "SN0001")
    drive["identity"].update(model="Model A", firmware=f"b{build:03d}")
    start = f"2026-{1 + build // 28 % 12:02d}-{1 + build % 28:02d}T{build // 336:02d}:00:00"
    run_id = f"run-{build:03d}"
    writer = RunWriter(target, run_id, Path("/lab") / run_id, {"cpu": "X"}, start)
    writer.add_device("d0", drive, drive["label"])
    for point in range(POINTS):
        ms = [_measurement(build, point, repeat) for repeat in range(REPEATS)]
        writer.add(TestRecords(ms[0].test, measurements=ms))
    writer.finish({"passed": POINTS}, complete=True)


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    _quiet(argv)
    return time.perf_counter() - started


def measure(target: Path | str, name: str, folder: Path) -> bool:
    started = time.perf_counter()
    for build in range(BUILDS):
        write_run(target, build)
    wrote = time.perf_counter() - started
    with ResultsDb(target) as db:
        count = db.conn.execute("SELECT count(*) FROM measurements").fetchone()[0]
    out = folder / f"site-{name}"
    argv = ["site", "-o", str(out), f"--db={target}"]
    full = timed(argv)
    write_run(target, BUILDS)
    rebuild = timed(argv)
    print(
        f"{name}: {count:,} measurements written in {wrote:.0f} s; site: the whole site"
        f" {full:.1f} s (target < {FULL_TARGET_S:.0f} s), the rebuild after one more run"
        f" {rebuild:.1f} s (target < {REBUILD_TARGET_S:.0f} s)"
    )
    return full < FULL_TARGET_S and rebuild < REBUILD_TARGET_S


def main_() -> int:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        targets: list[tuple[str, Path | str]] = [("SQLite", folder / "lab.sqlite")]
        reason = available()
        if reason is None:
            server = stack.enter_context(local_postgres())
            targets.append(("PostgreSQL", server.create_database("site")))
        else:
            print(f"PostgreSQL skipped: {reason}")
        met = [measure(target, name, folder) for name, target in targets]
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main_())
