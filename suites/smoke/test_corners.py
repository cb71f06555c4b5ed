"""Smoke suite: the four corners (SEQ 128 KiB and RND 4 KiB, read and write, QD32).

A few seconds per corner on the quick profile (the default on scratch).  Reads measure a span
that a prefill wrote first, so they read data, not holes.
"""

from __future__ import annotations

import pytest

from pytest_ssd import FioJob, SsdBench
from pytest_ssd.methods.smoke.workloads import CORNERS, corner_job, prefill_job, span_for


def jobs_of(ssd: SsdBench, corner: str) -> list[FioJob]:
    """The corner's job, after the prefill of the span a read corner measures (the plan
    counts both; the run skips the prefill when the span is written already)."""
    profile = ssd.profile.name
    capacity = ssd.dut.identity.size_bytes
    job = corner_job(corner, profile, capacity)
    return [job] if job.writes else [prefill_job(span_for(profile, capacity)), job]


@pytest.mark.ssd_jobs(jobs=jobs_of)
@pytest.mark.parametrize("corner", list(CORNERS))
def test_four_corners(ssd: SsdBench, corner: str) -> None:
    *prefill, job = jobs_of(ssd, corner)
    # reads measure written data: the span is filled first, in the same fio process
    setup = tuple(fill for one in prefill for fill in ssd.unwritten(one))

    result = ssd.run(job, setup=setup)

    direction = "read" if job.read_pct == 100 else "write"
    assert set(result.directions) == {direction}, "only the asked direction did I/O"
    done = result.directions[direction]
    assert done.io_bytes > 0 and done.io_bytes % job.block_size == 0
    # fio counts I/Os still in flight at the end of the runtime in io_bytes, not total_ios
    in_flight = job.iodepth * job.numjobs
    assert 0 <= done.io_bytes // job.block_size - done.total_ios <= in_flight
    assert result.options["offset"] == str(job.offset)
    assert result.options["size"] == str(job.size), "fio ran on the region asked for"
    assert done.clat is not None
    values = [p.ns for p in done.clat.percentiles()]
    assert values == sorted(values), "latency percentiles are monotonic"
    # drawn on the controller: an xdist worker does not load matplotlib for it
    ssd.plot("latency_percentiles", ssd.measurements[-1], f"{corner} tail latency")
