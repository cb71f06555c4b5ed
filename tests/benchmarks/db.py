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

3. Recording's share of a csd quick run's wall time: the records of a real csd
   quick run on ``scratch:4G`` (run first, about 5 minutes; ``--csd-db PATH``
   reuses a run's database), each test's in one transaction as the session
   wrote them, recorded again into a lab's server (with the run folder's spool,
   as a session with ``--ssd-db=postgresql://`` does) and into SQLite (the
   default).  Target: at most 5 % of the run's wall time.

Run: ``python -m tests.benchmarks.db [--csd-db PATH]`` (as root: the server runs as postgres).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_ssd.db import RunWriter, TestDone, TestRecords
from pytest_ssd.db.lab import LabWriter
from pytest_ssd.db.opening import open_reader
from pytest_ssd.db.reader import measurement_of
from pytest_ssd.db.runid import new_run_id
from pytest_ssd.db.sync import count_rows
from pytest_ssd.db.url import DbUrl, db_url
from pytest_ssd.results.record import Derived, SeriesRecord
from pytest_ssd.results.transition import Transition
from tests.benchmarks.csd_report import csd_run
from tests.pgserver import available, local_postgres
from tests.unit.db_fixtures import CORNERS, corner, description

MEASUREMENTS = 1000
#: recording's share of a csd quick run's wall time at most
CSD_SHARE = 0.05
REPEATS = 5
TARGET_RATIO = 1.5
WRITERS = 16
EACH = 100


def record(writer: RunWriter | LabWriter, count: int) -> list[float]:
    """*count* tests of one measurement each; each test's seconds in the writer, then the
    run's end's (making the records is not timed: a session gets them from its workers)."""
    writer.add_device("d0", description("d0", "drive"), "drive")
    times = []
    for n in range(count):
        m = corner("d0", CORNERS[n % 4], 1000.0 + n)
        m = type(m)(**{**m.as_dict(), "test": f"{m.test}-{n}"})
        done = TestDone(m.test, "passed", 0.02, None)
        started = time.perf_counter()
        writer.add(TestRecords(m.test, measurements=[m], done=done))  # as a session does
        times.append(time.perf_counter() - started)
    started = time.perf_counter()
    writer.finish({"passed": count}, complete=True)
    times.append(time.perf_counter() - started)
    return times


def timed(makers: list[Callable[[int], RunWriter | LabWriter]]) -> list[float]:
    """Each maker's writer's best of REPEATS recordings, the makers taking turns (the load
    other work puts on the machine changes by the minute, and only ever adds time)."""
    best = [float("inf")] * len(makers)
    for n in range(REPEATS):
        for index, make in enumerate(makers):
            started = time.perf_counter()
            writer = make(n)
            opened = time.perf_counter() - started
            best[index] = min(best[index], opened + sum(record(writer, MEASUREMENTS)))
    return best


def one_writer(args: tuple[str, str, str]) -> float:
    """A session of EACH measurements into *url*; its slowest test's recording (seconds)."""
    url, run_id, folder = args
    return max(record(RunWriter(url, run_id, Path(folder), {"host": run_id}), EACH))


def csd_tests(db: Path) -> tuple[float, list[TestRecords], dict[str, tuple[dict[str, Any], str]]]:
    """A csd run's wall time (s), each test's records as the session sent them, its devices."""
    conn = open_reader(db)
    try:
        run = conn.execute("SELECT * FROM runs ORDER BY start DESC LIMIT 1").fetchone()
        wall = datetime.fromisoformat(run["end"]) - datetime.fromisoformat(run["start"])
        key = (run["id"],)
        devices = {
            r["dut_id"]: (json.loads(r["description"]), r["label"])
            for r in conn.execute("SELECT * FROM run_devices WHERE run_id = ?", key)
        }
        tests = {}
        for r in conn.execute("SELECT * FROM tests WHERE run_id = ? ORDER BY id", key):
            done = TestDone(r["nodeid"], r["outcome"], r["duration_s"], r["message"], r["suite"])
            tests[r["nodeid"]] = TestRecords(r["nodeid"], done=done)
        where = "WHERE run_id = ? ORDER BY id"
        for r in conn.execute(f"SELECT * FROM measurements {where}", key):
            tests[r["test"]].measurements.append(measurement_of(r))
        for r in conn.execute(f"SELECT * FROM derived {where}", key):
            values = json.loads(r["values"])
            derived = Derived(test=r["test"], device=r["dut_id"], name=r["name"], values=values)
            tests[r["test"]].derived.append(derived)
        for r in conn.execute(f'SELECT test, "row" FROM verdicts {where}', key):
            tests[r["test"]].verdicts.append(json.loads(r["row"]))
        for r in conn.execute(f"SELECT test, data FROM transitions {where}", key):
            tests[r["test"]].transitions.append(_transition(r["data"]))
        for r in conn.execute(f"SELECT * FROM series {where}", key):
            meta = json.loads(r["meta"])
            record = SeriesRecord(device=r["dut_id"], name=r["name"], meta=meta, file="")
            tests[r["test"]].series.append((record, bytes(r["arrays"])))
    finally:
        conn.close()
    return wall.total_seconds(), list(tests.values()), devices


def _transition(data: str) -> Transition:
    """A stored transition (as_dict adds what it derives, totals ...) as the record it was."""
    kept = {f.name for f in fields(Transition)}
    return Transition.from_json(
        json.dumps({k: v for k, v in json.loads(data).items() if k in kept})
    )


def replay(writer: RunWriter | LabWriter, tests: list[TestRecords], devices: Any) -> float:
    """Seconds *writer* takes to record *tests* (and the run's start and end)."""
    started = time.perf_counter()
    for dut_id, (described, label) in devices.items():
        writer.add_device(dut_id, described, label)
    for records in tests:
        writer.add(records)
    writer.finish({"passed": len(tests)}, complete=True)
    return time.perf_counter() - started


def csd_share(lab: DbUrl, folder: Path, csd_db: Path | None) -> bool:
    """Recording a csd quick run's records, as a share of its wall time (target <= 5 %)."""
    if csd_db is None:
        (folder / "csd").mkdir()
        csd_db = csd_run(folder / "csd")
    wall, tests, devices = csd_tests(csd_db)
    measured = sum(len(t.measurements) for t in tests)
    times = {
        "a lab's server (+ spool)": replay(
            LabWriter(lab, new_run_id(), folder / "replay", {}), tests, devices
        ),
        "SQLite": replay(
            RunWriter(folder / "replay.sqlite", new_run_id(), folder, {}), tests, devices
        ),
    }
    print(
        f"csd quick: {len(tests)} tests, {measured} measurements in {wall:.0f} s of wall time;"
        " recording them: "
        + ", ".join(f"{name} {s:.2f} s ({s / wall:.1%})" for name, s in times.items())
        + f" (target <= {CSD_SHARE:.0%})"
    )
    return max(times.values()) / wall <= CSD_SHARE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csd-db", type=Path, help="a csd quick run's results database")
    args = parser.parse_args()
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
        ok &= csd_share(db_url(pg.create_database("csd")), folder, args.csd_db)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
