"""RND measurements in the RND steady state (METHOD §5): read and write by block size
(512 B ... 1 MiB, QD32) and by QD (4 KiB, QD 1 ... 256 and 4 workers x QD32, the
usual datasheet point), and 70 % read by QD, over the whole span.

As in test_seq.py: a sweep per fio process, a ramp and a measured time per point,
writes under the drive's indirection unit skipped with the reason.
"""

from __future__ import annotations

import pytest

from pytest_ssd import ESD_CLASSES, SsdBench
from pytest_ssd.methods.esd import limits_of, run_sweep
from pytest_ssd.workloads.esd import (
    MIXED_READ_PCT,
    RND_STATE,
    WORKERS_POINT,
    by_block_size,
    by_queue_depth,
    timing,
)

pytestmark = [pytest.mark.ssd_applies(*ESD_CLASSES), RND_STATE]
DIRECTIONS = [pytest.param(100, id="read"), pytest.param(0, id="write")]


@pytest.mark.parametrize("read_pct", DIRECTIONS)
def test_rnd_by_block_size(ssd: SsdBench, read_pct: int) -> None:
    span = ssd.region("device").size
    sweep = by_block_size("rnd", read_pct, span, timing(ssd.profile), limits_of(ssd))
    curve = run_sweep(ssd, sweep)
    assert len(curve.xs) + len(sweep.skipped) == len(sweep.points)


@pytest.mark.parametrize("read_pct", DIRECTIONS)
def test_rnd_by_qd(ssd: SsdBench, read_pct: int) -> None:
    span = ssd.region("device").size
    row, limits = timing(ssd.profile), limits_of(ssd)
    sweep = by_queue_depth("rnd", read_pct, span, row, limits, workers=[WORKERS_POINT])
    curve = run_sweep(ssd, sweep)
    assert curve.names[-1].endswith("qd32t4"), "the datasheet point: 4 workers x QD32"


def test_rnd_mixed_by_qd(ssd: SsdBench) -> None:
    span = ssd.region("device").size
    sweep = by_queue_depth("rnd", MIXED_READ_PCT, span, timing(ssd.profile), limits_of(ssd))
    run_sweep(ssd, sweep)
