"""Percentile and tail latency at QD1 in the cssd RND region (METHOD §4.5).

RND 4 KiB QD1 read, 70 % read and write, in both cssd rounds.  Each workload
runs a fixed number of I/Os, not a time: the full profile does 163,840, enough
for a real p99.999 (100,000 needed); the quick profile does fewer and shows
what it cannot resolve as "n/r".  The 70 % read workload is judged on all its
I/Os (read and write histograms merged), as seed 000's table does.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from pytest_ssd import ALL_CLASSES, DEFAULT_PERCENTILES, FioJob, SsdBench
from pytest_ssd.figures.latency import LatencySample, distribution, tail, tail_table
from pytest_ssd.methods.csd.workloads.flow import CSSD_ROUNDS
from pytest_ssd.methods.csd.workloads.profiles import LATENCY_MIXES, LATENCY_SIZE, latency_jobs

pytestmark = pytest.mark.ssd_applies(*ALL_CLASSES)  # csd applies to every class


def needed_ios(p: float) -> int:
    """I/Os a sample needs before its p-th percentile is more than its slowest I/O."""
    share = 1 - Fraction(str(p)) / 100
    return -(-1 // share)


def check_sample(sample: LatencySample, ios: int) -> None:
    assert sample.total == ios, f"{sample.label}: one latency per I/O"
    ps = sorted({*DEFAULT_PERCENTILES, 99.9999})
    found = sample.percentiles(ps)
    values = [p.ns for p in found]
    assert values == sorted(values), f"{sample.label}: percentiles are monotonic"
    for p in found:
        assert p.resolved == (sample.total >= needed_ios(p.p)), f"{sample.label} p{p.p:g}"


def jobs_of(ssd: SsdBench, phase: int) -> tuple[FioJob, ...]:
    """The three mixes' jobs (the plan counts them before the drive's first run)."""
    return latency_jobs(LATENCY_SIZE[ssd.profile.name], ssd.region("rnd"))


@pytest.mark.ssd_jobs(jobs=jobs_of)
@pytest.mark.parametrize("phase", CSSD_ROUNDS)
def test_percentile_and_tail_latency(ssd: SsdBench, phase: int) -> None:
    size = LATENCY_SIZE[ssd.profile.name]
    jobs = jobs_of(ssd, phase)

    run = ssd.run_jobs(*jobs)

    samples = []
    for job, mix in zip(jobs, LATENCY_MIXES, strict=True):
        result = run.result(job)
        assert sum(d.total_ios for d in result.directions.values()) == size.ios
        sample = LatencySample.of(mix.label, result)
        check_sample(sample, size.ios)
        samples.append(sample)
    table = tail_table(samples)
    if not ssd.profile.quick:
        assert all(p.resolved for column in table.cells for p in column), "full resolves p99.999"

    values: dict[str, object] = {"ios": size.ios, **table.values()}
    values.update({f"{s.label}.iops": s.iops for s in samples})
    ssd.derive("tail-latency", values)
    where = f"RND 4 KiB QD1, cssd round {phase}, {size.ios:,} I/Os each"
    ssd.figure(distribution(samples, f"latency distribution: {where}"), f"latency cssd-{phase}")
    ssd.figure(tail(samples, table, f"tail latency: {where}"), f"tail latency cssd-{phase}")
