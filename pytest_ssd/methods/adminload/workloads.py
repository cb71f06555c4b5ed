"""The reads measured with and without admin polling, and how long each runs."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.fio.job import FioJob

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
#: the queue depths of the random reads (a latency-bound and a loaded drive)
QDS = (1, 32)
#: admin polling rounds per second (each round: smart-log, error-log, id-ctrl and, where
#: the drive declares telemetry, a telemetry read): a fleet's monitor, and a busy one
RATES = (1.0, 10.0)

#: the qualification record's part
PART = "admin load"
#: the derived record the section draws
KIND = "admin-load"


@dataclass(frozen=True)
class Timing:
    """One run's ramp and measured time, the span read, and the runs a side."""

    runtime_s: float
    ramp_s: float
    span: int
    #: runs a side, taken in turns (4 a side is the fewest whose 95 % interval is bounded)
    rounds: int


PROFILES = {
    "quick": Timing(runtime_s=2, ramp_s=0.5, span=256 * MiB, rounds=4),
    "full": Timing(runtime_s=30, ramp_s=5, span=16 * GiB, rounds=6),
}


def span_for(profile: str, capacity: int) -> int:
    """The span read: the profile's, at most the device, whole MiB."""
    return min(PROFILES[profile].span, capacity) // MiB * MiB


def read_job(qd: int, profile: str, capacity: int) -> FioJob:
    """RND 4 KiB read at *qd* over the span: the same job polled and not."""
    timing = PROFILES[profile]
    return FioJob(
        name=f"adminload-rnd-4k-qd{qd}",
        pattern="rnd",
        block_size=4 * KiB,
        iodepth=qd,
        read_pct=100,
        size=span_for(profile, capacity),
        runtime_s=timing.runtime_s,
        ramp_s=timing.ramp_s,
    )


def prefill_job(span: int) -> FioJob:
    """One sequential pass over the span, so that the reads read data, not holes."""
    return FioJob(
        name="adminload-prefill", pattern="seq", block_size=MiB, iodepth=8, read_pct=0, size=span
    )
