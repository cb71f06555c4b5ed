"""Low-QD performance by read/write ratio (METHOD §4.4, seed 000 "Low QD Performance by RW Ratio").

Read share 0 … 100 % × QD 1, 2, 4; SEQ 128 KiB in the cSSD SEQ region, RND 4 KiB in
the RND region; each point repeated, the max and the min dropped and the rest
averaged; the QDs weighted 70/20/10 into one curve whose mean ranks the drive.
Measured in both cSSD rounds.  The matrix of one pattern runs in one fio process
(amount-based jobs one after another); see pytest_ssd/workloads/lowqd.py for how
the seed's amounts map to fio.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_ssd import ALL_CLASSES, FioJob, JobResult, Pattern, SsdBench
from pytest_ssd.figures.lowqd import ratio_curves, weighted_curves
from pytest_ssd.workloads.csd import CSSD_ROUNDS
from pytest_ssd.workloads.lowqd import PATTERNS, PLANS, plan_jobs, ratio_matrix

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


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("cssd_round", CSSD_ROUNDS)
def test_low_qd_by_rw_ratio(ssd: SsdBench, cssd_round: int, pattern: Pattern) -> None:
    plan = PLANS[ssd.profile.name]
    region = ssd.region(pattern)
    planned = plan_jobs(pattern, region, plan)
    assert all(region.contains(p.job.offset, p.job.size or 0) for p in planned)

    run = ssd.run_jobs(*(p.job for p in planned))

    for item in planned:
        check_job(item.job, run.result(item.job))
    matrix = ratio_matrix(pattern, plan, planned, run.result)
    assert matrix.samples.shape == (len(plan.queue_depths), len(plan.read_shares), plan.repetitions)
    assert np.all(matrix.samples > 0)
    # a trimmed mean lies within its runs; the weighted curve within its QD curves
    trimmed, weighted = matrix.trimmed, matrix.weighted()
    assert np.all(matrix.samples.min(axis=2) <= trimmed)
    assert np.all(trimmed <= matrix.samples.max(axis=2))
    assert np.all(trimmed.min(axis=0) <= weighted + 1e-9)
    assert np.all(weighted <= trimmed.max(axis=0) + 1e-9)

    summary = matrix.as_dict()
    summary["round"] = cssd_round
    summary["amount"] = plan.amount(pattern).describe()
    summary["region"] = region.describe()
    ssd.derive(f"lowqd-{pattern}", summary)
    title = f"{pattern} low QD by read share, cssd round {cssd_round}"
    ssd.figure(ratio_curves(matrix, ssd.dut.id), title)
    # the weighted curve (QD1 70 %, QD2 20 %, QD4 10 %); across drives it ranks them (issue 6)
    ssd.figure(
        weighted_curves({ssd.dut.id: matrix}), f"{pattern} weighted low QD, round {cssd_round}"
    )
