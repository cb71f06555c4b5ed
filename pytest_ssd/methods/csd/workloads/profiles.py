"""Quick profiles, sync writes and QD1 latency of the consumer suite as data (METHOD §4.1/3/5).

Each part has one table of sizes and durations keyed by profile: ``full`` is the
method verbatim (seed 000), ``quick`` the documented values of smoke runs.

Quick profiles stand in for CrystalDiskMark (CDM): its Default and NVMe
profiles, each test run in several passes over a test span, best pass shown.
As in CDM's "All", the read passes of every test come first, over data
already written (CDM writes its test file before measuring), then the write
passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob, Pattern
from pytest_ssd.fio.results import DirectionResult
from pytest_ssd.state.layout import Region

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
Direction = Literal["read", "write"]
DIRECTIONS: tuple[Direction, ...] = ("read", "write")
_READ_PCT: dict[Direction, int] = {"read": 100, "write": 0}


@dataclass(frozen=True)
class Span:
    """The bytes a workload runs over: ``[offset, offset + size)``."""

    offset: int
    size: int

    @classmethod
    def within(cls, region: Region, limit: int) -> Span:
        """The first *limit* bytes of *region* (all of it when smaller), whole MiB."""
        size = min(limit, region.size) // MiB * MiB
        if size <= 0:
            raise ConfigError(f"region {region.describe()} is smaller than 1 MiB: nothing to test")
        return cls(region.offset, size)


# ---- 4.1 quick profiles (CrystalDiskMark) ------------------------------------------------


@dataclass(frozen=True)
class CdmTiming:
    """How each CDM test runs: passes, seconds per pass, idle between passes, test span."""

    passes: int
    pass_s: float
    interval_s: float
    span: int


CDM_TIMING: dict[str, CdmTiming] = {
    # CDM's settings (METHOD §4.1): 5 passes of 5 s, 5 s apart, 1 GiB test file
    "full": CdmTiming(passes=5, pass_s=5.0, interval_s=5.0, span=1 * GiB),
    # smoke runs: one pass of 0.1 s over 256 MiB.  fio spends about 0.3 s starting and
    # reaping every job (it polls every 100 ms), so each pass costs ~0.4 s: 16 per state
    "quick": CdmTiming(passes=1, pass_s=0.1, interval_s=0.0, span=256 * MiB),
}


@dataclass(frozen=True)
class CdmTest:
    """One CDM test, named as CDM shows it: 'SEQ1M Q8T1', 'RND4K Q32T16'."""

    pattern: Pattern
    block_size: int
    iodepth: int
    numjobs: int = 1

    @property
    def label(self) -> str:
        unit, factor = ("M", MiB) if self.block_size >= MiB else ("K", KiB)
        size = f"{self.block_size // factor}{unit}"
        return f"{self.pattern.upper()}{size} Q{self.iodepth}T{self.numjobs}"

    @property
    def key(self) -> str:
        """The label as a job-name part: 'seq1m-q8t1'."""
        return self.label.lower().replace(" ", "-")


CDM_PROFILES: dict[str, tuple[CdmTest, ...]] = {
    "default": (
        CdmTest("seq", 1 * MiB, 8),
        CdmTest("seq", 1 * MiB, 1),
        CdmTest("rnd", 4 * KiB, 32),
        CdmTest("rnd", 4 * KiB, 1),
    ),
    "nvme": (
        CdmTest("seq", 1 * MiB, 8),
        CdmTest("seq", 128 * KiB, 32),
        CdmTest("rnd", 4 * KiB, 32, 16),
        CdmTest("rnd", 4 * KiB, 1),
    ),
}
#: the derived record of one line (profile, test, direction) of a state's quick profiles
LINE_RECORD = "cdm-line"
#: seed 000 runs them in this order
CDM_PROFILE_ORDER = ("default", "nvme")
CDM_TITLES = {"default": "Default", "nvme": "NVMe"}


@dataclass(frozen=True)
class CdmPass:
    """One pass of one CDM test in one direction, and the fio job that runs it."""

    profile: str
    test: CdmTest
    direction: Direction
    number: int
    job: FioJob


def cdm_passes(profile: str, timing: CdmTiming, spans: Mapping[str, Span]) -> tuple[CdmPass, ...]:
    """Every pass of *profile* in CDM's order: each test's reads, then each test's writes.

    SEQ tests run over ``spans["seq"]``, RND tests over ``spans["rnd"]`` (the same
    span outside cssd).  16 workers of a T16 test share the span, as CDM's threads
    share its test file.
    """
    if profile not in CDM_PROFILES:
        raise ConfigError(f"unknown CDM profile {profile!r}: use one of {', '.join(CDM_PROFILES)}")
    passes = []
    for direction in DIRECTIONS:
        for test in CDM_PROFILES[profile]:
            span = spans[test.pattern]
            for number in range(1, timing.passes + 1):
                job = FioJob.on(
                    span,
                    name=f"{profile}-{test.key}-{direction}-{number}",
                    pattern=test.pattern,
                    block_size=test.block_size,
                    iodepth=test.iodepth,
                    numjobs=test.numjobs,
                    read_pct=_READ_PCT[direction],
                    runtime_s=timing.pass_s,
                )
                passes.append(CdmPass(profile, test, direction, number, job))
    return tuple(passes)


def cdm_bursts(passes: Sequence[CdmPass], timing: CdmTiming) -> list[tuple[CdmPass, ...]]:
    """The passes grouped by fio process: one process for all of them when there is no interval.

    With an interval, every pass gets a process of its own and the caller idles
    between them (fio counts ``startdelay`` from its own start, not from the end of
    the previous stonewalled job, and its time-out would not include the idle).
    """
    if timing.interval_s <= 0:
        return [tuple(passes)] if passes else []
    return [(one,) for one in passes]


def cdm_prepare(span: Span) -> FioJob:
    """CDM's "preparing" step: one SEQ 1 MiB QD8 write of the test span, so reads read data."""
    return FioJob.on(
        span, name="cdm-prepare", pattern="seq", block_size=1 * MiB, iodepth=8, read_pct=0
    )


def best_pass(values: Sequence[float]) -> int:
    """Index of the best (highest) of the passes' values; the first one on a tie. CDM shows it."""
    if not values:
        raise ConfigError("no pass to pick the best of")
    return max(range(len(values)), key=lambda i: (values[i], -i))


@dataclass(frozen=True)
class CdmScore:
    """One CDM test in one direction: every pass's MB/s, MiB/s and IOPS, in pass order."""

    profile: str
    test: CdmTest
    direction: Direction
    mb_s: tuple[float, ...]
    mib_s: tuple[float, ...]
    iops: tuple[float, ...]

    @property
    def best(self) -> int:
        """Index of the pass CDM shows (the fastest)."""
        return best_pass(self.mb_s)

    def as_values(self) -> dict[str, object]:
        """The best pass and all passes, as JSON for ``ssd.derive``."""
        best = self.best
        stem = f"{self.test.key}.{self.direction}"
        return {
            f"{stem}.mb_s": self.mb_s[best],
            f"{stem}.mib_s": self.mib_s[best],
            f"{stem}.iops": self.iops[best],
            f"{stem}.best_pass": best + 1,
            f"{stem}.passes_mb_s": list(self.mb_s),
        }


def cdm_scores(
    passes: Sequence[CdmPass], measured: Mapping[str, DirectionResult]
) -> tuple[CdmScore, ...]:
    """Scores per test and direction from *measured* (job name -> what it did), in pass order."""
    grouped: dict[tuple[str, CdmTest, Direction], list[DirectionResult]] = {}
    for one in passes:
        grouped.setdefault((one.profile, one.test, one.direction), []).append(
            measured[one.job.name]
        )
    return tuple(
        CdmScore(
            profile,
            test,
            direction,
            tuple(r.bw_mb_s for r in results),
            tuple(r.bw_mib_s for r in results),
            tuple(r.iops for r in results),
        )
        for (profile, test, direction), results in grouped.items()
    )


# ---- 4.3 sync writes ---------------------------------------------------------------------


@dataclass(frozen=True)
class SyncSize:
    """How much each sync-write workload writes (one fsync per write)."""

    amount: int


SYNC_SIZE: dict[str, SyncSize] = {
    # seed 000: 1 GiB each (seed 001 used 500 MiB)
    "full": SyncSize(amount=1 * GiB),
    # the scratch loop device syncs 4,000-5,000 times a second: 2,048 RND writes, ~0.5 s
    "quick": SyncSize(amount=8 * MiB),
}


def sync_jobs(size: SyncSize, seq: Region, rnd: Region) -> tuple[FioJob, FioJob]:
    """SEQ 128 KiB QD1 over the SEQ region and RND 4 KiB QD1 over the RND region, fsync=1.

    Both run by amount (``io_bytes``); the RND one hits the whole RND region at random.
    """
    return (
        _sync_job("sync-seq128k-qd1", "seq", 128 * KiB, seq, size),
        _sync_job("sync-rnd4k-qd1", "rnd", 4 * KiB, rnd, size),
    )


def _sync_job(
    name: str, pattern: Pattern, block_size: int, region: Region, size: SyncSize
) -> FioJob:
    return FioJob.on(
        region,
        name=name,
        pattern=pattern,
        block_size=block_size,
        iodepth=1,
        read_pct=0,
        io_bytes=size.amount,
        fsync=1,
    )


# ---- 4.5 percentile and tail latency -----------------------------------------------------


@dataclass(frozen=True)
class LatencySize:
    """How many 4 KiB I/Os each QD1 latency workload does (by count, not time)."""

    ios: int

    @property
    def amount(self) -> int:
        return self.ios * LATENCY_BLOCK


LATENCY_BLOCK = 4 * KiB
LATENCY_SIZE: dict[str, LatencySize] = {
    # seed 000 takes its percentiles from the low-QD RND runs: 160 x 4 MiB = 163,840 I/Os,
    # more than the 100,000 a p99.999 needs
    "full": LatencySize(ios=160 * 1024),
    # 10,240 I/Os resolve p99.99 (10,000 needed); p99.999 shows as not resolved
    "quick": LatencySize(ios=10 * 1024),
}


@dataclass(frozen=True)
class LatencyMix:
    """One QD1 latency workload: its table label, job-name key and read share."""

    label: str
    key: str
    read_pct: int


#: RND 4 KiB QD1 read, 70 % read, write: seed 000's table columns
LATENCY_MIXES = (
    LatencyMix("RND read", "read", 100),
    LatencyMix("RND 70% read", "70r", 70),
    LatencyMix("RND write", "write", 0),
)


def latency_jobs(size: LatencySize, rnd: Region) -> tuple[FioJob, ...]:
    """The QD1 latency workloads of :data:`LATENCY_MIXES` over the RND region, ``size.ios`` each."""
    return tuple(_latency_job(mix, rnd, size) for mix in LATENCY_MIXES)


def _latency_job(mix: LatencyMix, rnd: Region, size: LatencySize) -> FioJob:
    return FioJob.on(
        rnd,
        name=f"lat-rnd4k-qd1-{mix.key}",
        pattern="rnd",
        block_size=LATENCY_BLOCK,
        iodepth=1,
        read_pct=mix.read_pct,
        io_bytes=size.amount,
    )
