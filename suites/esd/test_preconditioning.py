"""The enterprise flow's preconditioning, logged (METHOD §5, seed 001 "SEQ/RND Pre-Conditioning").

SEQ: purge (with its 15-minute rest) -> WIPC SEQ 128 KiB QD256 over 2 x the span
-> the same to fio's steady state (``bw_slope:10%`` held 30 s, at most 23 x the
span); it leaves the device in ``ss(seq-128k-write-qd256)`` for the SEQ
measurements.  RND, after them: RND 4 KiB QD256 over 2 x the span -> the same
to steady state; it leaves ``ss(rnd-4k-write-qd256)``.  No idle anywhere.

Graphs: bandwidth (SEQ) or IOPS (RND) and mean latency against time over both
jobs, and the WDPC part close up.
"""

from __future__ import annotations

import pytest

from pytest_ssd import ESD_CLASSES, SsdBench
from pytest_ssd.methods.esd.run import run_precondition
from pytest_ssd.methods.esd.workloads import (
    RND_PRECONDITION,
    RND_STEADY,
    SEQ_PRECONDITION,
    SEQ_STEADY,
)

pytestmark = pytest.mark.ssd_applies(*ESD_CLASSES)


@SEQ_PRECONDITION
def test_seq_preconditioning(ssd: SsdBench) -> None:
    log = run_precondition(ssd, SEQ_STEADY)
    assert log.unit == "MiB/s"


@RND_PRECONDITION
def test_rnd_preconditioning(ssd: SsdBench) -> None:
    log = run_precondition(ssd, RND_STEADY)
    assert log.unit == "IOPS"
