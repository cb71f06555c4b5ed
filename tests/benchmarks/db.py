"""A lab's database: recording into PostgreSQL against SQLite, and 16 writers at once.

1. 1,000 measurements (a test each: its records, then its outcome, two
   transactions; the best of five, taking turns) recorded by the run writer
   into SQLite (the default) and into PostgreSQL (a server of its own, unix
   socket, fsync on).  Target: PostgreSQL at most 1.5x SQLite's time.  Also
   shown: a session's whole cost with a lab's server, which records each test
   into the run folder's spool as well.
2. 16 writers (processes, as 16 sessions) recording 100 measurements each
   into one PostgreSQL at once.  Target: rows lost 0; the slowest test's
   recording shown (its two transactions sent; the answers are read every 32
   and at the run's end).

Run: ``python -m tests.benchmarks.db`` (as root: the server runs as postgres).
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_ssd.db import RunWriter, TestRecords
from pytest_ssd.db.lab import LabWriter
from pytest_ssd.db.opening import open_reader
from pytest_ssd.db.sync import count_rows
from pytest_ssd.db.url import db_url
from tests.pgserver import available, local_postgres
from tests.unit.db_fixtures import CORNERS, corner, description

MEASUREMENTS = 1000
REPEATS = 5
TARGET_RATIO = 1.5
WRITERS = 16
EACH = 100


def record(writer: RunWriter | LabWriter, count: int) -> list[float]:
    """*count* tests of one measurement each; each test's seconds in the writer."""
    writer.add_device("d0", description("d0", "drive"), "drive")
    times = []
    for n in range(count):
        m = corner("d0", CORNERS[n % 4], 1000.0 + n)
        m = type(m)(**{**m.as_dict(), "test": f"{m.test}-{n}"})
        started = time.perf_counter()
        writer.add(TestRecords(m.test, measurements=[m]))
        writer.test_done(m.test, "passed", 0.02, None)
        times.append(time.perf_counter() - started)
    writer.finish({"passed": count}, complete=True)
    return times


def timed(makers: list[Callable[[int], RunWriter | LabWriter]]) -> list[float]:
    """Each maker's writer's best of REPEATS recordings, the makers taking turns (the load
    other work puts on the machine changes by the minute, and only ever adds time)."""
    best = [float("inf")] * len(makers)
    for n in range(REPEATS):
        for index, make in enumerate(makers):
            writer = make(n)
            started = time.perf_counter()
            record(writer, MEASUREMENTS)
            best[index] = min(best[index], time.perf_counter() - started)
    return best


def one_writer(args: tuple[str, str, str]) -> float:
    """A session of EACH measurements into *url*; its slowest test's recording (seconds)."""
    url, run_id, folder = args
    return max(record(RunWriter(url, run_id, Path(folder), {"host": run_id}), EACH))


def main() -> int:
    reason = available()
    if reason is not None:
        print(f"skipped: {reason}")
        return 0
    ok = True
    with tempfile.TemporaryDirectory() as tmp, local_postgres() as pg:
        folder = Path(tmp)
        alone = pg.create_database("alone")
        lab = db_url(pg.create_database("lab"))
        sqlite_s, pg_s, lab_s = timed(
            [
                lambda n: RunWriter(folder / f"{n}.sqlite", "run-1", folder, {}),
                lambda n: RunWriter(alone, f"run-{n}", folder, {}),
                lambda n: LabWriter(lab, f"run-{n}", folder / f"run-{n}", {}),
            ]
        )
        ratio = pg_s / sqlite_s
        ok &= ratio <= TARGET_RATIO
        print(f"{MEASUREMENTS} measurements: SQLite {sqlite_s:.2f} s, PostgreSQL {pg_s:.2f} s")
        print(f"PostgreSQL / SQLite: {ratio:.2f}x (target <= {TARGET_RATIO}x)")
        print(f"a session with a lab's server (server + spool in the run folder): {lab_s:.2f} s")

        url = pg.create_database("many")
        jobs = [(url, f"run-{n}", str(folder)) for n in range(WRITERS)]
        started = time.perf_counter()
        with multiprocessing.get_context("spawn").Pool(WRITERS) as pool:
            slowest = max(pool.map(one_writer, jobs))
        wall = time.perf_counter() - started
        conn = open_reader(url)
        try:
            per_run = count_rows(conn, "run-0")
            lost = sum(per_run - count_rows(conn, f"run-{n}") for n in range(WRITERS))
            expected = per_run * WRITERS
        finally:
            conn.close()
        ok &= lost == 0 and per_run > EACH
        print(
            f"{WRITERS} writers x {EACH} measurements at once: {wall:.1f} s, {expected} rows,"
            f" rows lost {lost} (target 0), slowest test recorded in {slowest * 1000:.0f} ms"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
