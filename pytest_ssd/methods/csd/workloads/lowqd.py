"""Low-QD performance by read/write ratio as data (METHOD §4.4, seed 000).

The matrix: read share 0 … 100 % in steps of 10 × QD 1, 2, 4, for SEQ 128 KiB in
the cSSD SEQ region and RND 4 KiB in the RND region; every point repeated 5
times (the analysis drops the max and the min and averages the rest).

How "128MiB *3" and "4MiB *160" map to fio (seed 000: "각 128MiB *3의 작업",
"각 4MiB *160의 작업", each point does work of 128 MiB × 3 / 4 MiB × 160): the
product is the amount of I/O of one point, moved by one amount-based fio job
(``io_size``), reads and writes together.  Not ``size=4MiB, loops=160``:
the seed has the test access its preconditioned region exactly as the sync
test does, and there RND is "완전히 랜덤" (fully random) over the whole RND region,
not 1,024 blocks of one 4 MiB span hit 160 times (which a drive would serve
from its mapping cache).  And the seed extracts its percentile-latency graphs
from these runs: 160 × 4 MiB = 163,840 I/Os of 4 KiB, just over the 10^5 one
sample needs to resolve five nines — the amount is one sample, not 160.

* RND: each job runs over the whole RND region, ``io_size`` = 160 × 4 MiB.
  Every job has a random stream of its own (:func:`point_seed`, the CRC-32 of
  its name): the five repetitions sample different LBAs and read/write
  sequences (five runs of a tool would), no point reads the LBAs the point
  before it just wrote, the stream is the same whether the job runs alone,
  stonewalled or in a batch (:func:`pytest_ssd.fio.job.fio_seed`), and the
  whole matrix stays reproducible.
* SEQ: each job reads/writes its own slice of 3 × 128 MiB of the SEQ region,
  slices taken in turn in run order (wrapping round on a small region).  With
  one fixed start every point would re-read what the points before it had just
  written (from the drive's SLC cache); in turn, every point reads data as
  the preconditioning left it.  fio's sequential mix keeps one position per
  direction, so reads and writes both run from the slice's start.
* Run order: QD ascending, read share ascending within a QD, each point's
  repetitions one after another: a point is one test
  (``test_low_qd[seq-cssd1-qd2-r70]``) that holds its repetitions and their
  trimmed mean, so ``-k`` can pick it.  (The seed's scripts swept the matrix once
  per repetition; with repetitions back to back a slow drift of the drive lands
  within a point's runs, where dropping the max and the min takes its ends out.)
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob, Pattern, format_bytes
from pytest_ssd.fio.results import JobResult
from pytest_ssd.results.history import repetition_name
from pytest_ssd.state.layout import Region

KiB, MiB = 1 << 10, 1 << 20
PATTERNS: tuple[Pattern, ...] = ("seq", "rnd")
#: block size per pattern (seed 000: SEQ 128 KiB, RND 4 KiB)
BLOCK_SIZES: dict[Pattern, int] = {"seq": 128 * KiB, "rnd": 4 * KiB}


@dataclass(frozen=True)
class Amount:
    """An amount of I/O the way seed 000 writes it: *count* × *chunk* bytes."""

    chunk: int
    count: int

    @property
    def total(self) -> int:
        """Bytes one point moves, reads and writes together (fio's ``io_size``)."""
        return self.chunk * self.count

    def describe(self) -> str:
        """'3 × 128MiB'."""
        return f"{self.count} × {format_bytes(self.chunk)}"


@dataclass(frozen=True)
class LowQdPlan:
    """The matrix and its amounts under one profile."""

    read_shares: tuple[int, ...]
    queue_depths: tuple[int, ...]
    repetitions: int
    seq: Amount
    rnd: Amount

    def __post_init__(self) -> None:
        if self.repetitions < 3:
            raise ConfigError(
                f"low-QD plan: {self.repetitions} repetitions; dropping the max and the min "
                "needs at least 3"
            )
        if any(not 0 <= share <= 100 for share in self.read_shares) or not self.read_shares:
            raise ConfigError(f"low-QD plan: read shares {self.read_shares} must be 0..100")

    def amount(self, pattern: Pattern) -> Amount:
        """The amount of one point of *pattern*."""
        return self.seq if pattern == "seq" else self.rnd

    @property
    def points(self) -> int:
        """Jobs per pattern: shares × queue depths × repetitions."""
        return len(self.read_shares) * len(self.queue_depths) * self.repetitions


#: full: seed 000 verbatim.  quick (scratch, CI): the three QDs the weights need, the
#: ends of the read shares and 70 % (the usual mixed datasheet point), and the fewest
#: repetitions a drop-max-and-min mean allows: 9 points of 3 jobs per pattern and round.
#: Amounts keep the seed's counts with smaller chunks: RND 160 × 16 KiB = 640 I/Os (p99
#: resolved), SEQ 3 × 8 MiB = 192 I/Os.
PLANS: dict[str, LowQdPlan] = {
    "full": LowQdPlan(
        read_shares=tuple(range(0, 101, 10)),
        queue_depths=(1, 2, 4),
        repetitions=5,
        seq=Amount(128 * MiB, 3),
        rnd=Amount(4 * MiB, 160),
    ),
    "quick": LowQdPlan(
        read_shares=(0, 70, 100),
        queue_depths=(1, 2, 4),
        repetitions=3,
        seq=Amount(8 * MiB, 3),
        rnd=Amount(16 * KiB, 160),
    ),
}


@dataclass(frozen=True)
class Point:
    """One cell of the matrix and one of its repetitions (0-based)."""

    queue_depth: int
    read_pct: int
    repetition: int


@dataclass(frozen=True)
class PlannedJob:
    """A fio job and the point of the matrix it measures."""

    point: Point
    job: FioJob


def point_seed(pattern: Pattern, point: Point) -> int:
    """The job's random stream: its own per pattern, QD, read share and repetition.

    Every job reads and writes LBAs of its own (a point does not read what the point
    before it just wrote), the same in a lone fio run, in a batch or stonewalled.
    """
    return zlib.crc32(job_name(pattern, point).encode())


def job_name(pattern: Pattern, point: Point) -> str:
    """'rnd-q1-r070-n2': pattern, QD, read share, repetition (history's series of the point
    holds its repetitions: :func:`~pytest_ssd.results.history.repetition_name`)."""
    return repetition_name(
        f"{pattern}-q{point.queue_depth}-r{point.read_pct:03d}", point.repetition
    )


def points(plan: LowQdPlan) -> tuple[Point, ...]:
    """Every point and repetition in run order: QD, then read share, then repetition."""
    return tuple(
        Point(qd, share, rep)
        for qd in plan.queue_depths
        for share in plan.read_shares
        for rep in range(plan.repetitions)
    )


def _spans(pattern: Pattern, region: Region, amount: int, count: int) -> list[tuple[int, int]]:
    """(offset, size) of each job: the whole region for RND, slices in turn for SEQ."""
    if pattern == "rnd" or region.size < 2 * amount:
        return [(region.offset, region.size)] * count
    slices = region.size // amount
    return [(region.offset + (index % slices) * amount, amount) for index in range(count)]


def plan_jobs(pattern: Pattern, region: Region, plan: LowQdPlan) -> tuple[PlannedJob, ...]:
    """The matrix of *pattern* on *region* as amount-based fio jobs, in run order."""
    block = BLOCK_SIZES[pattern]
    amount = plan.amount(pattern).total
    if region.size < block or amount % block:
        raise ConfigError(
            f"low-QD {pattern}: region {region.describe()} or amount {format_bytes(amount)} "
            f"does not fit {format_bytes(block)} blocks"
        )
    order = points(plan)
    spans = _spans(pattern, region, amount, len(order))
    return tuple(
        PlannedJob(
            point,
            FioJob(
                name=job_name(pattern, point),
                pattern=pattern,
                block_size=block,
                iodepth=point.queue_depth,
                read_pct=point.read_pct,
                offset=offset,
                size=size,
                io_bytes=amount,
                seed=point_seed(pattern, point),
            ),
        )
        for point, (offset, size) in zip(order, spans, strict=True)
    )


def throughput_mib_s(result: JobResult) -> float:
    """Reads and writes together: the sum of fio's per-direction bandwidths, MiB/s."""
    moved = [d.bw_bytes_s for name, d in result.directions.items() if name in ("read", "write")]
    return sum(moved) / MiB


def point_jobs(
    pattern: Pattern, region: Region, plan: LowQdPlan, queue_depth: int, read_pct: int
) -> tuple[PlannedJob, ...]:
    """The repetitions of one point of the matrix, in run order (where the matrix puts them)."""
    found = tuple(
        item
        for item in plan_jobs(pattern, region, plan)
        if (item.point.queue_depth, item.point.read_pct) == (queue_depth, read_pct)
    )
    if not found:
        raise ConfigError(f"low-QD {pattern}: QD{queue_depth} at {read_pct} % read is not planned")
    return found
