"""Admin commands under load (docs/admin-load.md): the latency cost of a fleet's polling.

RND 4 KiB reads at QD1 and QD32, each run without and with ``nvme smart-log``,
``error-log`` and ``id-ctrl`` (and a telemetry read where the drive declares it) polled on
the device's machine at 1 and 10 rounds a second; p99 and p99.9 judged polled against
not (regressed fails, same passes, unknown is not judged).  A device with no NVMe admin
interface is skipped in one line.
"""

from __future__ import annotations

import pytest

from pytest_ssd import SsdBench
from pytest_ssd.methods.adminload.run import jobs_of, measure
from pytest_ssd.methods.adminload.workloads import QDS, RATES


@pytest.mark.ssd_jobs(jobs=jobs_of)
@pytest.mark.parametrize("rate", RATES, ids=[f"{r:g}per-s" for r in RATES])
@pytest.mark.parametrize("qd", QDS, ids=[f"qd{qd}" for qd in QDS])
def test_admin_polling_under_load(ssd: SsdBench, qd: int, rate: float) -> None:
    measure(ssd, qd, rate)
