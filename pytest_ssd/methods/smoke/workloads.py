"""The four corners: SEQ 128 KiB and RND 4 KiB, read and write, QD32 (suites/smoke)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.fio.job import FioJob, Pattern

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class Timing:
    """How long each workload runs, and over how much of the device."""

    runtime_s: float
    ramp_s: float
    span: int


#: quick: a few seconds per corner; full: long enough for caches to matter
PROFILES = {
    "quick": Timing(runtime_s=3, ramp_s=1, span=1 * GiB),
    "full": Timing(runtime_s=60, ramp_s=10, span=16 * GiB),
}

#: name -> (pattern, block size, read share %)
CORNERS: dict[str, tuple[Pattern, int, int]] = {
    "seq-read": ("seq", 128 * KiB, 100),
    "seq-write": ("seq", 128 * KiB, 0),
    "rnd-read": ("rnd", 4 * KiB, 100),
    "rnd-write": ("rnd", 4 * KiB, 0),
}
IODEPTH = 32


def span_for(profile: str, capacity: int) -> int:
    """The tested span: the profile's, at most the device, whole MiB."""
    return min(PROFILES[profile].span, capacity) // MiB * MiB


def corner_job(name: str, profile: str, capacity: int) -> FioJob:
    pattern, block_size, read_pct = CORNERS[name]
    timing = PROFILES[profile]
    return FioJob(
        name=name,
        pattern=pattern,
        block_size=block_size,
        iodepth=IODEPTH,
        read_pct=read_pct,
        size=span_for(profile, capacity),
        runtime_s=timing.runtime_s,
        ramp_s=timing.ramp_s,
    )


def prefill_job(span: int) -> FioJob:
    """One sequential pass that writes the span, so reads measure written data."""
    return FioJob(
        name="prefill", pattern="seq", block_size=1 * MiB, iodepth=8, read_pct=0, size=span
    )
