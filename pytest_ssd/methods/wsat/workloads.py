"""Write saturation (METHOD §6, seed 000; the SNIA PTS WSAT test): the jobs and their analysis.

From FOB (purge, then its rest), one workload until 4 × capacity has gone through
or a time cap, whichever comes first (fio's ``io_size`` and ``runtime`` without
``time_based``), logged every interval:

| workload | amount | QD × jobs |
|---|---|---|
| RND 4 KiB write | 4 × capacity written | 32 × 1 *(choice)* |
| SEQ 512 B, 50/50 read/write | 4 × capacity of reads and writes *(choice)* | 32 × 1 *(choice)* |

For the mix the seed says "for 4 × capacity": taken as fio's ``io_size``, the
reads and the writes together (about 2 × capacity written).

The PTS leaves the outstanding I/O to the operator; QD32 is the method's RND
point.  Graphs: IOPS against time and against GiB written, the steady-state
region marked.  The region is found with the SNIA rule applied to time windows
(:func:`steady_region`): the log is cut into rounds of ``round_s`` (1 minute,
the PTS's WSAT reporting interval), and every run of 5 rounds whose mean IOPS
hold the rule (range ≤ 20 %, fitted-line excursion ≤ 10 % of the mean) is
steady; the region is the union of those windows, "reached" at the first.

Quick profile: 4 × the quick span (the first 16 GiB at most; 4 GiB on
scratch:1G), a 20 s time cap instead of 24 h *(choice: 24 h / 300 would still be
288 s per workload)*, 100 ms logs and 1 s rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_ssd.analysis.fill import DIRECTION_CODES, FioLog
from pytest_ssd.errors import ParseError
from pytest_ssd.fio.job import FioJob, Pattern, fio_seconds
from pytest_ssd.state.profile import Profile
from pytest_ssd.steady.snia import SniaRule, SniaVerdict, judge_window

KiB = 1 << 10
Floats = npt.NDArray[np.float64]
#: seed 000: 4 x capacity
AMOUNT_FACTOR = 4


@dataclass(frozen=True)
class WsatTiming:
    """Amount, time cap and logging of a WSAT run under one profile."""

    amount_factor: int
    #: the time cap: seed 000 "or 24 h"
    time_cap_s: float
    #: fio's log window (log_avg_msec)
    log_ms: int
    #: the rounds the SNIA rule judges (the PTS's WSAT reports per minute)
    round_s: float
    iodepth: int = 32
    numjobs: int = 1


TIMING = {
    "full": WsatTiming(AMOUNT_FACTOR, time_cap_s=24 * 3600.0, log_ms=1000, round_s=60.0),
    "quick": WsatTiming(AMOUNT_FACTOR, time_cap_s=20.0, log_ms=100, round_s=1.0),
}


@dataclass(frozen=True)
class WsatWorkload:
    """One WSAT workload: 'rnd-4k-write' or 'seq-512b-50r'."""

    name: str
    title: str
    pattern: Pattern
    block_size: int
    read_pct: int

    def job(self, span: int, timing: WsatTiming) -> FioJob:
        """The workload over *span* until ``amount_factor`` x span of I/O or the time cap.

        ``runtime_s`` is the cap (fio's runtime also sets the process's timeout);
        ``time_based=0`` after it lets the amount end the job first.
        """
        size = span // self.block_size * self.block_size
        amount = timing.amount_factor * size
        return FioJob(
            name=f"wsat-{self.name}",
            pattern=self.pattern,
            block_size=self.block_size,
            iodepth=timing.iodepth,
            numjobs=timing.numjobs,
            read_pct=self.read_pct,
            size=size,
            runtime_s=timing.time_cap_s,
            log_avg_ms=timing.log_ms,
            percentiles=(),
            extra=(("time_based", "0"), ("io_size", str(amount))),
        )


WORKLOADS = {
    w.name: w
    for w in (
        WsatWorkload("rnd-4k-write", "RND 4 KiB write", "rnd", 4 * KiB, 0),
        WsatWorkload("seq-512b-50r", "SEQ 512 B 50/50 read/write", "seq", 512, 50),
    )
}


def timing(profile: Profile) -> WsatTiming:
    return TIMING[profile.name]


def amount_of(job: FioJob) -> int:
    """The bytes *job* is asked to move (its ``io_size``)."""
    return int(dict(job.extra)["io_size"])


@dataclass(frozen=True, eq=False)
class WsatLog:
    """The run as logged: per window its end (s), IOPS over all directions, bytes written so far."""

    t_s: Floats
    iops: Floats
    written: Floats


def wsat_log(bw: FioLog, block_size: int) -> WsatLog:
    """IOPS and bytes written per window from fio's averaged bandwidth log (KiB/s).

    Every I/O has the job's block size, so IOPS = bandwidth / block size exactly;
    a mixed job logs a read and a write line per window, added here.  Bytes
    written are the integral of the write bandwidth, the first window from 0.
    """
    t_s = np.unique(bw.t_s)
    if not len(t_s) or t_s[0] <= 0:
        raise ParseError("the WSAT bandwidth log has no windows with a length")
    index = np.searchsorted(t_s, bw.t_s)
    iops = np.zeros(len(t_s))
    np.add.at(iops, index, bw.value * KiB / block_size)
    write_bw = np.zeros(len(t_s))
    writes = bw.direction == DIRECTION_CODES["write"]
    np.add.at(write_bw, index[writes], bw.value[writes] * KiB)
    return WsatLog(t_s, iops, np.cumsum(write_bw * np.diff(t_s, prepend=0.0)))


def round_means(log: WsatLog, round_s: float) -> Floats:
    """Mean IOPS of each whole round of *round_s* seconds (NaN: no window ended in it).

    A window belongs to the round its end falls in; the last, partial round is left out.
    """
    whole = int(log.t_s[-1] // round_s) if len(log.t_s) else 0
    index = np.ceil(log.t_s / round_s).astype(int) - 1
    keep = index < whole
    sums = np.bincount(index[keep], weights=log.iops[keep], minlength=whole)
    counts = np.bincount(index[keep], minlength=whole)
    with np.errstate(invalid="ignore", divide="ignore"):
        means: Floats = sums / counts
    return means


@dataclass(frozen=True)
class SteadyRegion:
    """Where the rounds hold the SNIA rule: the windows that do, merged into spans of rounds."""

    rule: SniaRule
    rounds: tuple[float, ...]
    #: (first, last) round numbers (from 1) of each stretch of holding windows
    spans: tuple[tuple[int, int], ...]
    #: the verdict on the first window that holds, or on the last window when none does
    first: SniaVerdict | None

    @property
    def reached(self) -> bool:
        return bool(self.spans)

    @property
    def rounds_in(self) -> int:
        return sum(last - first + 1 for first, last in self.spans)

    def summary(self, round_s: float) -> str:
        if self.first is None:
            return f"{len(self.rounds)} rounds of {round_s:g} s: too few for the SNIA window"
        if not self.reached:
            return (
                f"no steady state over {len(self.rounds)} rounds of {round_s:g} s: "
                + (self.first.summary().partition(": ")[2])
            )
        start = (self.spans[0][0] - 1) * round_s
        return (
            f"steady from round {self.spans[0][0]} (t = {start:g} s), {self.rounds_in} of "
            f"{len(self.rounds)} rounds of {round_s:g} s steady: "
            + self.first.summary().partition(": ")[2]
        )

    def as_dict(self, round_s: float) -> dict[str, object]:
        return {
            "round_s": round_s,
            "rounds": list(self.rounds),
            "reached": self.reached,
            "spans": [list(s) for s in self.spans],
            "rounds_in": self.rounds_in,
            "summary": self.summary(round_s),
            "first": self.first.as_dict() if self.first is not None else None,
        }


def steady_region(rounds: Floats, rule: SniaRule | None = None) -> SteadyRegion:
    """Judge every window of ``rule.window`` consecutive rounds with the SNIA rule.

    Windows with a round without samples (NaN) or a mean of 0 are not judged.
    """
    rule = rule or SniaRule()
    values = tuple(float(v) for v in rounds)
    clean = [0.0 if np.isnan(v) else v for v in values]
    holding: list[tuple[int, int]] = []
    first: SniaVerdict | None = None
    last_verdict: SniaVerdict | None = None
    for last in range(rule.window, len(values) + 1):
        window = values[last - rule.window : last]
        if any(np.isnan(v) for v in window) or not any(window):
            continue
        verdict = judge_window(clean[:last], rule)
        last_verdict = verdict
        if verdict.attained:
            first = first or verdict
            holding.append((verdict.window_first, verdict.window_last))
    return SteadyRegion(rule, values, _merge(holding), first or last_verdict)


def _merge(windows: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for first, last in windows:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


def cap_text(timing: WsatTiming) -> str:
    return f"{timing.amount_factor} x capacity or {fio_seconds(timing.time_cap_s)} s"
