"""The vendor's acceptance check: random 4 KiB reads at QD32 against the datasheet.

The device is brought to the state the test declares (fresh out of the box:
purged), the span it reads is written first, and the figure is checked against
the datasheet line ``rnd-read-qd32`` through pytest-ssd's own spec check.
"""

from __future__ import annotations

import pytest

from pytest_ssd import FioJob, SsdBench

KIND = "vendor-acceptance"
#: the span read: the first GiB (or the whole of a smaller device)
SPAN = 1 << 30
#: (runtime, ramp) seconds per profile
TIMES = {"quick": (3.0, 1.0), "full": (60.0, 10.0)}


def jobs_of(ssd: SsdBench) -> list[FioJob]:
    """The measured job: declared, so that a drive's first plan counts its time."""
    runtime_s, ramp_s = TIMES[ssd.profile.name]
    job = FioJob.on(
        ssd.region("device").head(SPAN),
        name="rnd-read-qd32",
        pattern="rnd",
        block_size=4096,
        iodepth=32,
        read_pct=100,
        runtime_s=runtime_s,
        ramp_s=ramp_s,
    )
    return [job]


@pytest.mark.dut_state("fob")
@pytest.mark.ssd_jobs(jobs=jobs_of)
def test_random_read_qd32(ssd: SsdBench) -> None:
    (job,) = jobs_of(ssd)
    span = ssd.region("device").head(SPAN)
    fill = FioJob.on(span, name="fill", pattern="seq", block_size=128 << 10, iodepth=32, read_pct=0)

    result = ssd.run(job, setup=ssd.unwritten(fill))

    verdict = ssd.check_spec("rnd-read-qd32", result) if ssd.datasheet else None
    iops = result.directions["read"].iops
    ssd.derive(
        KIND,
        {
            "check": "RND read 4KiB QD32",
            "measured": iops,
            "unit": "IOPS",
            "verdict": verdict.message if verdict else "not checked: no datasheet",
        },
    )
    assert iops > 0
    # drawn where the report is written: the suite's own figure kind (conftest.py) and the
    # esd method's, from the measurement this test made
    measured = ssd.measurements[-1]
    ssd.plot("vendor_iops", measured, "acceptance iops")
    ssd.plot("qos_percentiles", measured, "acceptance qos")
    if verdict is not None:
        assert verdict.status == "met", verdict.message
