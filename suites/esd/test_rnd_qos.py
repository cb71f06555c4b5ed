"""QoS at QD1 in the RND steady state (METHOD §5, seed 001's QoS graph and table).

RND 4 KiB QD1 read, write and 70 % read over the whole span, each a ramp and a
measured time: every I/O's completion latency on the percentile axis (linear to
90 %, a step per nine above) and the figures datasheets quote: typical (mean),
p99 and p99.99 ("n/r" where the sample is too small to resolve it).
"""

from __future__ import annotations

import pytest

from pytest_ssd import ESD_CLASSES, SsdBench
from pytest_ssd.methods.esd.run import qos_run_jobs, run_qos
from pytest_ssd.methods.esd.workloads import RND_STATE

pytestmark = [pytest.mark.ssd_applies(*ESD_CLASSES), RND_STATE]


@pytest.mark.ssd_jobs(jobs=qos_run_jobs)
def test_qos_qd1(ssd: SsdBench) -> None:
    found = run_qos(ssd)
    for point, curve in found:
        assert curve.sample.total > 0
        low, high = curve.sample.values_ns.min() / 1000, curve.sample.values_ns.max() / 1000
        assert low <= curve.mean_us <= high, f"{point.job.name}: the mean lies in the sample"
