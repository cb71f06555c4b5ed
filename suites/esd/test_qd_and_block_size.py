"""SEQ and RND measurements in their steady states (METHOD §5), one test per sweep.

By block size (512 B ... 1 MiB at QD32) and by QD (QD 1 ... 256 at 128 KiB SEQ
or 4 KiB RND), read and write, over the whole span; RND adds 4 workers x QD32
(the usual datasheet point) to its QD sweep and 70 % read by QD.  Each pattern
runs in its own steady state (``seq-ss``, ``rnd-ss``: the parameter's marker).

Each sweep is one fio process, its points one after another; each point a ramp
and a measured time (30 s and 5 minutes; quick: 0.2 s and 0.5 s).  Writes
smaller than the drive's indirection unit (when it is over 4 KiB) are skipped,
and the test says why.
"""

from __future__ import annotations

import pytest

from pytest_ssd import ESD_CLASSES, Pattern, SsdBench
from pytest_ssd.methods.esd import limits_of, run_sweep
from pytest_ssd.workloads.esd import (
    MIXED_READ_PCT,
    RND_STATE,
    SEQ_STATE,
    WORKERS_POINT,
    by_block_size,
    by_queue_depth,
    timing,
)

pytestmark = pytest.mark.ssd_applies(*ESD_CLASSES)
SEQ = pytest.param("seq", marks=SEQ_STATE, id="seq")
RND = pytest.param("rnd", marks=RND_STATE, id="rnd")
DIRECTIONS = [pytest.param(100, id="read"), pytest.param(0, id="write")]


@pytest.mark.parametrize("read_pct", DIRECTIONS)
@pytest.mark.parametrize("pattern", [SEQ, RND])
def test_by_block_size(ssd: SsdBench, pattern: Pattern, read_pct: int) -> None:
    span = ssd.region("device").size
    sweep = by_block_size(pattern, read_pct, span, timing(ssd.profile), limits_of(ssd))
    curve = run_sweep(ssd, sweep)
    assert len(curve.xs) + len(sweep.skipped) == len(sweep.points)


@pytest.mark.parametrize("read_pct", DIRECTIONS)
@pytest.mark.parametrize("pattern", [SEQ, RND])
def test_by_qd(ssd: SsdBench, pattern: Pattern, read_pct: int) -> None:
    span = ssd.region("device").size
    workers = [WORKERS_POINT] if pattern == "rnd" else []
    sweep = by_queue_depth(
        pattern, read_pct, span, timing(ssd.profile), limits_of(ssd), workers=workers
    )
    curve = run_sweep(ssd, sweep)
    single = list(curve.xs[: len(curve.xs) - len(workers)])  # the workers' points come last
    assert single == sorted(single), "QD ascending"
    assert not workers or curve.names[-1].endswith("qd32t4"), "the datasheet point last"


@pytest.mark.parametrize("pattern", [RND])
def test_mixed_by_qd(ssd: SsdBench, pattern: Pattern) -> None:
    span = ssd.region("device").size
    sweep = by_queue_depth(pattern, MIXED_READ_PCT, span, timing(ssd.profile), limits_of(ssd))
    run_sweep(ssd, sweep)
