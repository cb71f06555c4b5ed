"""SEQ measurements in the SEQ steady state (METHOD §5): read and write by block size
(512 B ... 1 MiB, QD32) and by QD (128 KiB, QD 1 ... 256), over the whole span.

Each sweep is one fio process, its points one after another; each point a ramp
and a measured time (30 s and 5 minutes; quick: 0.2 s and 0.5 s).  Writes
smaller than the drive's indirection unit (when it is over 4 KiB) are skipped,
and the test says why.
"""

from __future__ import annotations

import pytest

from pytest_ssd import ESD_CLASSES, SsdBench
from pytest_ssd.methods.esd import limits_of, run_sweep
from pytest_ssd.workloads.esd import SEQ_STATE, by_block_size, by_queue_depth, timing

pytestmark = [pytest.mark.ssd_applies(*ESD_CLASSES), SEQ_STATE]
DIRECTIONS = [pytest.param(100, id="read"), pytest.param(0, id="write")]


@pytest.mark.parametrize("read_pct", DIRECTIONS)
def test_seq_by_block_size(ssd: SsdBench, read_pct: int) -> None:
    span = ssd.region("device").size
    sweep = by_block_size("seq", read_pct, span, timing(ssd.profile), limits_of(ssd))
    curve = run_sweep(ssd, sweep)
    assert len(curve.xs) + len(sweep.skipped) == len(sweep.points)


@pytest.mark.parametrize("read_pct", DIRECTIONS)
def test_seq_by_qd(ssd: SsdBench, read_pct: int) -> None:
    span = ssd.region("device").size
    sweep = by_queue_depth("seq", read_pct, span, timing(ssd.profile), limits_of(ssd))
    curve = run_sweep(ssd, sweep)
    assert curve.xs == tuple(sorted(curve.xs))
