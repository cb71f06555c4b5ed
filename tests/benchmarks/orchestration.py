"""Orchestration: wall time of the low-QD matrix against the time fio spent moving data.

The low-QD matrix (quick sizes, suites/csd/test_lowqd.py) on a 1 GiB direct-I/O
loop device, two ways:

1. through pytest-ssd: one fio process per pattern and round, the jobs one after
   another (stonewall).  Wall time = each test's call phase (junitxml with
   ``junit_duration_report=call``: fio, parsing, recording, analysis, figures;
   not the state transition before it, see tests/benchmarks/states.py);
2. one fio process per point, as ezFIO and TKperf run (the same jobs, one
   ``run_jobs`` each: fio start-up, parsing).

Both against the sum of the runtimes fio reports per job (``job_runtime``; the
jobs are amount-based).  Target: pytest-ssd's wall time <= 1.10 x that sum.
Run: ``python -m tests.benchmarks.orchestration [--report-only]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from pytest_ssd.fio.engine import run_jobs
from pytest_ssd.state.layout import layout
from pytest_ssd.state.spec import parse_state
from pytest_ssd.workloads.lowqd import PATTERNS, PLANS, plan_jobs
from tests.benchmarks.lab import REPO, loop_device, run_pytest, verdict

TARGET = 1.10
SIZE_MIB = 1024
MODULE = "test_lowqd.py"
TEST = "test_low_qd_by_rw_ratio"


def fio_runtime_s(folder: Path) -> tuple[float, int, float]:
    """(sum of fio's job_runtime, jobs, fio process wall times) of the runs under *folder*."""
    runtime, jobs, processes = 0.0, 0, 0.0
    for stdout in folder.rglob("fio.stdout"):
        text = stdout.read_text()
        data = json.loads(text[text.index("{") :])
        runtime += sum(job["job_runtime"] for job in data["jobs"]) / 1000
        jobs += len(data["jobs"])
        processes += float((stdout.parent / "fio.seconds").read_text())
    return runtime, jobs, processes


def call_seconds(junitxml: Path) -> float:
    """Sum of the call phases of the low-QD tests in a junitxml report."""
    cases = ET.parse(junitxml).getroot().iter("testcase")
    return sum(float(case.get("time", "0")) for case in cases if TEST in case.get("name", ""))


def through_plugin(dev: Path, work: Path) -> tuple[float, float, int, float]:
    """(call wall, fio job runtimes, jobs, fio process wall) of the suite module on *dev*."""
    xml = work / "junit.xml"
    run = run_pytest(
        REPO / "suites" / "csd" / MODULE,
        work / "reports",
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--ssd-profile=quick",
        f"--junitxml={xml}",
        "-o",
        "junit_duration_report=call",
    )
    runtime, jobs, processes = fio_runtime_s(run.run_dir / "artifacts")
    return call_seconds(xml), runtime, jobs, processes


def per_point(dev: Path, work: Path) -> tuple[float, float, int]:
    """(wall, fio job runtimes, jobs) of the quick matrix, one fio process per point."""
    size = SIZE_MIB << 20
    regions = layout(parse_state("cssd"), size, size)
    folder = work / "per-point"
    start = time.monotonic()
    for pattern in PATTERNS:
        for item in plan_jobs(pattern, regions.region(pattern), PLANS["quick"]):
            run_jobs([item.job], dev, artifacts=folder / item.job.name)
    wall = time.monotonic() - start
    runtime, jobs, _ = fio_runtime_s(folder)
    return wall, runtime, jobs


def describe(how: str, jobs: int, wall: float, runtime: float) -> str:
    return (
        f"{how}: {jobs} jobs, wall {wall:.2f} s for {runtime:.2f} s of fio job runtime"
        f" = {wall / runtime:.2f} x ({(wall - runtime) / jobs:.3f} s a job beyond its runtime)"
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ssd-orchestration-") as tmp:
        work = Path(tmp)
        with loop_device(work, SIZE_MIB) as dev:
            wall, runtime, jobs, processes = through_plugin(dev, work)
            pp_wall, pp_runtime, pp_jobs = per_point(dev, work)
    ratio = wall / runtime
    print(describe("pytest-ssd, one fio process per pattern and round", jobs, wall, runtime))
    between, rest = (processes - runtime) / jobs, wall - processes
    print(
        f"  fio processes {processes:.2f} s ({between:.3f} s a job between jobs);"
        f" the rest (parse, record, analysis, figures) {rest:.2f} s"
    )
    print(describe("one fio process per point (ezFIO, TKperf)", pp_jobs, pp_wall, pp_runtime))
    ok = ratio <= TARGET
    print(verdict("orchestration", f"{ratio:.2f} x the fio job runtimes", f"<= {TARGET} x", ok))
    return 0 if ok or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
