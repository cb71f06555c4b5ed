"""Write saturation from FOB (METHOD §6; SNIA PTS WSAT): IOPS until 4 x capacity or a time cap.

RND 4 KiB writes, and SEQ 512 B at 50/50 read/write, each from a fresh purge,
logged throughout; IOPS against time and against GiB written with the
steady-state region (the SNIA rule over rounds of time) marked.  Applies to
write-intensive enterprise drives (``--dut-class=essd-wi``) and to scratch
devices; other drives skip with the reason, and so does a workload whose
blocks the device's logical block refuses (512 B on a 4 KiB-sector drive),
before its purge.
"""

from __future__ import annotations

import pytest

from pytest_ssd import WSAT_CLASSES, SsdBench
from pytest_ssd.methods.wsat.run import check_run, run_wsat
from pytest_ssd.methods.wsat.workloads import WORKLOADS

pytestmark = pytest.mark.ssd_applies(*WSAT_CLASSES)


#: a device whose logical block refuses a workload's blocks skips it before the purge
PARAMS = [
    pytest.param(name, id=name, marks=pytest.mark.ssd_block_size(w.block_size))
    for name, w in WORKLOADS.items()
]


@pytest.mark.dut_state("fob", pristine=True)
@pytest.mark.parametrize("workload", PARAMS)
def test_write_saturation(ssd: SsdBench, workload: str) -> None:
    run = run_wsat(ssd, WORKLOADS[workload])
    check_run(run)
