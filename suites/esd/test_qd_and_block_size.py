"""SEQ and RND measurements in their steady states (METHOD §5), one test per point.

By block size (512 B ... 1 MiB at QD32) and by QD (QD 1 ... 256 at 128 KiB SEQ
or 4 KiB RND), read and write, over the whole span; RND adds 4 workers x QD32
(the usual datasheet point) to its QD sweep and 70 % read by QD.  Each pattern
runs in its own steady state (``seq-ss``, ``rnd-ss``).

Each point is a test (``test_rnd_by_qd[read-qd32]``, ``test_seq_by_block_size[write-64KiB]``):
a ramp and a measured time (30 s and 5 minutes; quick: 0.2 s and 0.5 s), the
sweep's points in order.  The report draws each sweep's curve from its points'
records.  Writes smaller than the drive's indirection unit (when it is over
4 KiB) are skipped, and the test says why.  A datasheet line of a point's
workload and state (``--datasheet``) is checked in that point's test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_ssd import ESD_CLASSES, FioJob, Pattern, SsdBench
from pytest_ssd.methods.esd.run import limits_of, run_point
from pytest_ssd.methods.esd.workloads import (
    MIXED_READ_PCT,
    RND_STATE,
    SEQ_STATE,
    TIMING,
    WORKERS_POINT,
    EsdTiming,
    Limits,
    Sweep,
    by_block_size,
    by_queue_depth,
    timing,
)

pytestmark = pytest.mark.ssd_applies(*ESD_CLASSES)
#: (read share, id) of the sweeps' directions
DIRECTIONS = ((100, "read"), (0, "write"))


def qd_sweep(pattern: Pattern, read_pct: int, span: int, row: EsdTiming, limits: Limits) -> Sweep:
    """By QD; RND reads and writes end with the 4 workers x QD32 point."""
    plain = pattern == "seq" or read_pct == MIXED_READ_PCT
    workers = [] if plain else [WORKERS_POINT]
    return by_queue_depth(pattern, read_pct, span, row, limits, workers=workers)


def points(build: Any, pattern: Pattern, mixed: bool = False) -> list[Any]:
    """One param (read share, index in the sweep) per point: ``read-64KiB``, ``r70-qd32``."""
    directions = [*DIRECTIONS, *([(MIXED_READ_PCT, f"r{MIXED_READ_PCT}")] if mixed else [])]
    params = []
    for read_pct, direction in directions:
        sweep = build(pattern, read_pct, 1 << 30, TIMING["quick"], Limits())
        for index, point in enumerate(sweep.points):
            x = point.job.name.rpartition("-")[2].removeprefix("bs")  # 64KiB, qd32t4
            job = point.job
            # what it measures over the whole device: a datasheet line of this workload and
            # state is checked here (the datasheet suite skips it)
            measures = pytest.mark.ssd_workload(
                pattern=job.pattern,
                block_size=job.block_size,
                iodepth=job.iodepth,
                numjobs=job.numjobs,
                read_pct=job.read_pct,
            )
            params.append(pytest.param(read_pct, index, marks=measures, id=f"{direction}-{x}"))
    return params


def sweep_of(ssd: SsdBench, build: Any, pattern: Pattern, read_pct: int) -> Sweep:
    """The sweep over the whole span of the test's state."""
    span = ssd.region("device").size
    return build(pattern, read_pct, span, timing(ssd.profile), limits_of(ssd))


def point_jobs(build: Any, pattern: Pattern) -> Callable[..., list[FioJob]]:
    """The ``ssd_jobs`` of a sweep's tests: a point's job (none for a skipped point)."""

    def jobs_of(ssd: SsdBench, read_pct: int, index: int) -> list[FioJob]:
        point = sweep_of(ssd, build, pattern, read_pct).points[index]
        return [] if point.skipped is not None else [point.job]

    return jobs_of


def measure(ssd: SsdBench, build: Any, pattern: Pattern, read_pct: int, index: int) -> None:
    run_point(ssd, sweep_of(ssd, build, pattern, read_pct), index)


@SEQ_STATE
@pytest.mark.ssd_jobs(jobs=point_jobs(by_block_size, "seq"))
@pytest.mark.parametrize(("read_pct", "index"), points(by_block_size, "seq"))
def test_seq_by_block_size(ssd: SsdBench, read_pct: int, index: int) -> None:
    measure(ssd, by_block_size, "seq", read_pct, index)


@SEQ_STATE
@pytest.mark.ssd_jobs(jobs=point_jobs(qd_sweep, "seq"))
@pytest.mark.parametrize(("read_pct", "index"), points(qd_sweep, "seq"))
def test_seq_by_qd(ssd: SsdBench, read_pct: int, index: int) -> None:
    measure(ssd, qd_sweep, "seq", read_pct, index)


@RND_STATE
@pytest.mark.ssd_jobs(jobs=point_jobs(by_block_size, "rnd"))
@pytest.mark.parametrize(("read_pct", "index"), points(by_block_size, "rnd"))
def test_rnd_by_block_size(ssd: SsdBench, read_pct: int, index: int) -> None:
    measure(ssd, by_block_size, "rnd", read_pct, index)


@RND_STATE
@pytest.mark.ssd_jobs(jobs=point_jobs(qd_sweep, "rnd"))
@pytest.mark.parametrize(("read_pct", "index"), points(qd_sweep, "rnd", mixed=True))
def test_rnd_by_qd(ssd: SsdBench, read_pct: int, index: int) -> None:
    measure(ssd, qd_sweep, "rnd", read_pct, index)
