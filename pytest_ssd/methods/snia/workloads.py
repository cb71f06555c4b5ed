"""The SNIA PTS tests as data: IOPS, throughput and latency (METHOD §3, §5; SNIA SSS PTS).

A test runs *rounds*; a round is one pass over the test's *cells* (one R/W mix at
one block size for the cell time, 1 minute), R/W mixes the outer loop and block
sizes the inner one, all in one fio process, the cells one after another
(``stonewall``).  After every round from the 5th the SNIA rule
(:mod:`pytest_ssd.steady.snia`: 5-round window, range ≤ 20 %, fitted-line
excursion ≤ 10 %) judges the test's tracked variable; the test stops when it
holds or after 25 rounds.  Before every test the PTS purge and its
workload-independent preconditioning (``wipc``: SEQ 128 KiB QD256 over
2 × capacity) are reached through :data:`pytest_ssd.methods.snia.run.PTS_STATE`; the
first rounds are the workload-dependent preconditioning, as the PTS has it.

| test | cells | QD × jobs | tracked variable |
|---|---|---|---|
| IOPS | RND, mixes 100/0 … 0/100 × 1024 … 0.5 KiB | 32 × 4 *(choice)* | 4 KiB 0/100 IOPS |
| throughput (per bs) | SEQ 1024 or 128 KiB, 100/0 + 0/100 | 32 × 1 *(choice)* | write MiB/s |
| latency | RND 8, 4, 0.5 KiB × 100/0, 65/35, 0/100 | 1 × 1 | 4 KiB 0/100 mean latency |

The PTS leaves the outstanding I/O of the IOPS and throughput tests to the
operator: 4 workers × QD32 is the datasheets' RND point (METHOD §5); a single
worker keeps a SEQ stream sequential.  The throughput test runs once per block
size, each with its own purge and WIPC (the PTS 2.0 layout).

Quick profile (:data:`PLANS`): cells of 1 s (the 1-minute cell scaled like every
duration, ``Profile.seconds``), the IOPS matrix reduced to mixes 100/0, 65/35,
0/100 × 128, 4, 0.5 KiB (9 of 56 cells, the tracked cell kept), and at most 6
rounds instead of 25 (the 5-round window and one more), so that ``suites/snia``
takes about 3.5 minutes on a 1 GiB scratch device on a busy 2-core VM.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob, Pattern, format_bytes
from pytest_ssd.state.profile import Profile
from pytest_ssd.steady.snia import SniaRule

KiB = 1 << 10
#: the PTS's loops, in its order
IOPS_MIXES = (100, 95, 65, 50, 35, 5, 0)
IOPS_BLOCKS = (1024 * KiB, 128 * KiB, 64 * KiB, 32 * KiB, 16 * KiB, 8 * KiB, 4 * KiB, 512)
THROUGHPUT_MIXES = (100, 0)
THROUGHPUT_BLOCKS = (1024 * KiB, 128 * KiB)
LATENCY_MIXES = (100, 65, 0)
LATENCY_BLOCKS = (8 * KiB, 4 * KiB, 512)
#: outstanding I/O (QD, workers) where the PTS lets the operator choose *(choice)*
IOPS_OIO = (32, 4)
THROUGHPUT_OIO = (32, 1)
LATENCY_OIO = (1, 1)
#: quick profile: the reduced IOPS matrix and the round cap
QUICK_IOPS_MIXES = (100, 65, 0)
QUICK_IOPS_BLOCKS = (128 * KiB, 4 * KiB, 512)
QUICK_MAX_ROUNDS = 6
#: the PTS: purge, then WIPC (SEQ 128 KiB QD256, 2 x capacity), for every test afresh

Metric = Literal["iops", "bw_mib_s", "clat_mean_us"]
UNITS: dict[Metric, str] = {"iops": "IOPS", "bw_mib_s": "MiB/s", "clat_mean_us": "µs"}
QUANTITIES: dict[Metric, str] = {
    "iops": "IOPS",
    "bw_mib_s": "throughput",
    "clat_mean_us": "mean completion latency (clat)",
}


def mix_label(read_pct: int) -> str:
    """'65/35': the PTS's R/W mix."""
    return f"{read_pct}/{100 - read_pct}"


@dataclass(frozen=True)
class Cell:
    """One R/W mix at one block size."""

    read_pct: int
    block_size: int

    @property
    def label(self) -> str:
        """'65/35 4KiB'."""
        return f"{mix_label(self.read_pct)} {format_bytes(self.block_size)}"

    @property
    def key(self) -> str:
        """'r65-4KiB', for fio job names."""
        return f"r{self.read_pct}-{format_bytes(self.block_size)}"


@dataclass(frozen=True, kw_only=True)
class PtsTest:
    """One SNIA PTS test: its cells (mixes outer, block sizes inner) and its tracked variable."""

    name: str
    title: str
    pattern: Pattern
    mixes: tuple[int, ...]
    block_sizes: tuple[int, ...]
    iodepth: int
    numjobs: int
    tracked: Cell
    metric: Metric

    def __post_init__(self) -> None:
        if self.tracked not in self.cells:
            raise ConfigError(f"SNIA {self.name}: tracked cell {self.tracked.label} is no cell")

    @property
    def cells(self) -> tuple[Cell, ...]:
        return tuple(Cell(mix, bs) for mix in self.mixes for bs in self.block_sizes)

    @property
    def tracked_index(self) -> int:
        return self.cells.index(self.tracked)

    @property
    def unit(self) -> str:
        return UNITS[self.metric]

    @property
    def quantity(self) -> str:
        """'4KiB 0/100 IOPS': the tracked variable in words."""
        bs = format_bytes(self.tracked.block_size)
        return f"{bs} {mix_label(self.tracked.read_pct)} {QUANTITIES[self.metric]}"

    def job(self, cell: Cell, span: int, cell_s: float) -> FioJob:
        """*cell* over the whole span for *cell_s* seconds (no ramp: the rounds are the ramp)."""
        return FioJob(
            name=f"{self.name}-{cell.key}",
            pattern=self.pattern,
            block_size=cell.block_size,
            iodepth=self.iodepth,
            numjobs=self.numjobs,
            read_pct=cell.read_pct,
            offset=0,
            size=span // cell.block_size * cell.block_size,
            runtime_s=cell_s,
        )

    def within(self, refuses: Callable[[int], str | None]) -> tuple[PtsTest, dict[str, str]]:
        """This test less the block sizes the drive refuses, and why each was left out.

        *refuses* is the drive's ``Limits.skip_block``: a 4 KiB-sector drive takes no
        0.5 KiB cells, they leave the rounds (the report says why) and the tracked cell
        stays; a drive that refuses the tracked cell is a :class:`ConfigError`.
        """
        reasons = {bs: refuses(bs) for bs in self.block_sizes}
        kept = tuple(bs for bs in self.block_sizes if reasons[bs] is None)
        left = {format_bytes(bs): why for bs, why in reasons.items() if why is not None}
        return dataclasses.replace(self, block_sizes=kept), left

    def round_jobs(self, span: int, cell_s: float) -> tuple[FioJob, ...]:
        """One round: every cell in the PTS's order."""
        return tuple(self.job(cell, span, cell_s) for cell in self.cells)


@dataclass(frozen=True)
class SniaPlan:
    """How literally the PTS runs under one profile."""

    cell_s: float
    rule: SniaRule
    iops_mixes: tuple[int, ...]
    iops_blocks: tuple[int, ...]

    def tests(self) -> dict[str, PtsTest]:
        """The PTS tests by name: iops, throughput-1024KiB, throughput-128KiB, latency."""
        qd, jobs = IOPS_OIO
        found = [
            PtsTest(
                name="iops",
                title="IOPS",
                pattern="rnd",
                mixes=self.iops_mixes,
                block_sizes=self.iops_blocks,
                iodepth=qd,
                numjobs=jobs,
                tracked=Cell(0, 4 * KiB),
                metric="iops",
            ),
            *(_throughput(bs) for bs in THROUGHPUT_BLOCKS),
            PtsTest(
                name="latency",
                title="Latency",
                pattern="rnd",
                mixes=LATENCY_MIXES,
                block_sizes=LATENCY_BLOCKS,
                iodepth=LATENCY_OIO[0],
                numjobs=LATENCY_OIO[1],
                tracked=Cell(0, 4 * KiB),
                metric="clat_mean_us",
            ),
        ]
        return {test.name: test for test in found}


def _throughput(block_size: int) -> PtsTest:
    bs = format_bytes(block_size)
    return PtsTest(
        name=f"throughput-{bs}",
        title=f"Throughput SEQ {bs}",
        pattern="seq",
        mixes=THROUGHPUT_MIXES,
        block_sizes=(block_size,),
        iodepth=THROUGHPUT_OIO[0],
        numjobs=THROUGHPUT_OIO[1],
        tracked=Cell(0, block_size),
        metric="bw_mib_s",
    )


def plan(profile: Profile) -> SniaPlan:
    """The PTS verbatim (full) or scaled down (quick, see the module docstring)."""
    cell_s = profile.seconds(profile.snia_round_s)
    if profile.quick:
        rule = SniaRule(max_rounds=QUICK_MAX_ROUNDS)
        return SniaPlan(cell_s, rule, QUICK_IOPS_MIXES, QUICK_IOPS_BLOCKS)
    return SniaPlan(cell_s, SniaRule(), IOPS_MIXES, IOPS_BLOCKS)


#: test ids of the throughput tests (the parameter of suites/snia/test_throughput.py)
THROUGHPUT_TESTS = tuple(f"throughput-{format_bytes(bs)}" for bs in THROUGHPUT_BLOCKS)
