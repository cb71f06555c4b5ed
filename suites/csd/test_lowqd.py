"""Low-QD performance by read/write ratio (METHOD §4.4, seed 000 "Low QD Performance by RW Ratio").

Read share 0 … 100 % × QD 1, 2, 4; SEQ 128 KiB in the cSSD SEQ region, RND 4 KiB in
the RND region; each point repeated, the max and the min dropped and the rest
averaged; the QDs weighted 70/20/10 into one curve whose mean ranks the drive.
Measured in both cSSD rounds.  Each point is one test, ``test_low_qd[seq-cssd1-qd2-r70]``
(pattern, round, QD, read share) holding its repetitions (amount-based jobs); the
consecutive points of a round run in one fio process, each point's jobs released by
its test (``jobs=jobs_of``, see docs/csd.md); the report draws the curves, the
weighted curve and the ranking from every point's ``lowqd-point`` record.  See
pytest_ssd/methods/csd/workloads/lowqd.py for how the seed's amounts map to fio.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_ssd import ALL_CLASSES, FioJob, JobResult, Pattern, SsdBench
from pytest_ssd.methods.csd.analysis.lowqd import POINT_RECORD, point_values
from pytest_ssd.methods.csd.workloads.flow import CSSD_ROUNDS
from pytest_ssd.methods.csd.workloads.lowqd import (
    BLOCK_SIZES,
    PATTERNS,
    PLANS,
    point_jobs,
    throughput_mib_s,
)

pytestmark = pytest.mark.ssd_applies(*ALL_CLASSES)  # csd applies to every class


def check_job(job: FioJob, result: JobResult) -> None:
    """fio moved the job's amount, in the directions and the mix asked for, where asked."""
    moved = {name: d for name, d in result.directions.items() if d.io_bytes}
    assert sum(d.io_bytes for d in moved.values()) == job.io_bytes, f"{job.name}: amount"
    expected = {100: {"read"}, 0: {"write"}}.get(job.read_pct, {"read", "write"})
    assert set(moved) == expected, f"{job.name}: directions {sorted(moved)}"
    if len(expected) == 2:
        ios = sum(d.total_ios for d in moved.values())
        share = moved["read"].total_ios / ios
        p = job.read_pct / 100
        # fio draws each I/O's direction: allow 5 standard deviations of a binomial draw
        slack = 5 * math.sqrt(p * (1 - p) / ios) + 1 / ios
        assert abs(share - p) <= slack, f"{job.name}: read share {share:.1%}"
    assert result.options["offset"] == str(job.offset)
    assert result.options["size"] == str(job.size)
    assert result.options["iodepth"] == str(job.iodepth)


def low_qd_points(profile: str) -> list[Any]:
    """Every point of the matrix under *profile*, in both cssd rounds, in the method's order."""
    plan = PLANS[profile]
    return [
        pytest.param(
            pattern,
            cssd_round.values[0],
            qd,
            share,
            marks=cssd_round.marks,
            id=f"{pattern}-cssd{cssd_round.values[0]}-qd{qd}-r{share}",
        )
        for cssd_round in CSSD_ROUNDS
        for pattern in PATTERNS
        for qd in plan.queue_depths
        for share in plan.read_shares
    ]


def jobs_of(
    ssd: SsdBench, pattern: Pattern, cssd_round: int, qd: int, read_pct: int
) -> list[FioJob]:
    """The point's repetitions (the plugin runs consecutive points in one fio process)."""
    plan = PLANS[ssd.profile.name]
    return [p.job for p in point_jobs(pattern, ssd.region(pattern), plan, qd, read_pct)]


@pytest.mark.ssd_points("pattern, cssd_round, qd, read_pct", low_qd_points, jobs=jobs_of)
def test_low_qd(ssd: SsdBench, pattern: Pattern, cssd_round: int, qd: int, read_pct: int) -> None:
    plan = PLANS[ssd.profile.name]
    region = ssd.region(pattern)
    planned = point_jobs(pattern, region, plan, qd, read_pct)
    assert len(planned) == plan.repetitions
    assert all(region.contains(p.job.offset, p.job.size or 0) for p in planned)

    run = ssd.run_jobs(*(p.job for p in planned))

    for item in planned:
        check_job(item.job, run.result(item.job))
    samples = [throughput_mib_s(run.result(p.job)) for p in planned]
    assert min(samples) > 0
    values = point_values(
        pattern=pattern,
        block_size=BLOCK_SIZES[pattern],
        read_shares=plan.read_shares,
        queue_depths=plan.queue_depths,
        queue_depth=qd,
        read_pct=read_pct,
        samples_mib_s=samples,
        amount=plan.amount(pattern).describe(),
    )
    # a trimmed mean lies within its runs
    assert min(samples) <= values["trimmed_mib_s"] <= max(samples)
    # the curves per QD, the weighted curve and the ranking are drawn in the report from
    # every point's record (a point that did not run is shown missing)
    ssd.derive(POINT_RECORD, {**values, "round": cssd_round, "region": region.describe()})
