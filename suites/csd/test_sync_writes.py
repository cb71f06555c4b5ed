"""Sync writes: fsync after every write, QD1, in the cssd regions (METHOD §4.3).

SEQ 128 KiB inside the SEQ region and RND 4 KiB anywhere in the RND region, a
fixed amount each (1 GiB in full, as seed 000; seed 001 used 500 MiB), in both
cssd rounds.  A drive without power-loss protection must commit every write
to flash before the sync returns: the MiB/s show what its firmware makes of it.
"""

from __future__ import annotations

import pytest

from pytest_ssd import ALL_CLASSES, FioJob, SsdBench
from pytest_ssd.methods.csd.figures.grid import Bar, mib_bars
from pytest_ssd.methods.csd.workloads.flow import CSSD_ROUNDS
from pytest_ssd.methods.csd.workloads.profiles import SYNC_SIZE, sync_jobs

pytestmark = pytest.mark.ssd_applies(*ALL_CLASSES)  # csd applies to every class


def jobs_of(ssd: SsdBench, phase: int) -> tuple[FioJob, ...]:
    """SEQ and RND synced writes (the plan counts them before the drive's first run)."""
    return sync_jobs(SYNC_SIZE[ssd.profile.name], ssd.region("seq"), ssd.region("rnd"))


@pytest.mark.ssd_jobs(jobs=jobs_of)
@pytest.mark.parametrize("phase", CSSD_ROUNDS)
def test_sync_writes(ssd: SsdBench, phase: int) -> None:
    size = SYNC_SIZE[ssd.profile.name]
    seq, rnd = ssd.region("seq"), ssd.region("rnd")
    jobs = jobs_of(ssd, phase)

    run = ssd.run_jobs(*jobs)

    bars: list[Bar] = []
    values: dict[str, object] = {"amount": size.amount}
    for job, region in zip(jobs, (seq, rnd), strict=True):
        result = run.result(job)
        assert set(result.directions) == {"write"}, "sync workloads only write"
        done = result.directions["write"]
        assert done.io_bytes == size.amount, "runs by amount: every byte asked for"
        assert done.total_ios == size.amount // job.block_size
        assert result.options["fsync"] == "1", "fio synced after every write"
        assert (result.options["offset"], result.options["size"]) == (
            str(region.offset),
            str(region.size),
        ), "inside the region"
        bars.append(Bar(job.label.removesuffix(" write") + " + fsync", ssd.dut.id, done.bw_mib_s))
        values[f"{job.name}.mib_s"] = done.bw_mib_s
        values[f"{job.name}.iops"] = done.iops

    ssd.derive("sync-writes", values)
    ssd.figure(mib_bars(bars, f"sync writes, cssd round {phase}"), f"sync writes cssd-{phase}")
