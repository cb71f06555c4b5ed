"""The enterprise SSD method's flow and jobs as data (seed 000/001 "eSSD Test", METHOD §5).

purge -> 15 min idle -> WIPC (SEQ 128 KiB QD256, 2 x capacity) -> the same
workload to steady state (fio ``bw_slope:10%`` held 30 s, at most 23 x
capacity) -> SEQ measurements -> RND 4 KiB QD256 2 x capacity -> the same to
steady state -> RND measurements; io_uring, the whole span, no idle after the
post-purge rest.

The two preconditionings are tests of their own (:data:`SEQ_PRECONDITION`,
:data:`RND_PRECONDITION`): they run the WIPC and WDPC jobs with bandwidth and
latency logs (the preconditioning graphs) and leave the device in the steady
state the measurements declare.  Every measurement is a ramp and a measured
time; one sweep (by block size, by QD) is one fio process, its points one after
another (``stonewall``).  Choices, kept as parameters here: block-size sweeps
run at QD32 (:data:`BS_SWEEP_QD`), QD sweeps at SEQ 128 KiB / RND 4 KiB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from pytest_ssd.fio.job import FioJob, Pattern, format_bytes
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.spec import Workload, parse_workload
from pytest_ssd.state.steps import STEADY_CAP_FACTOR
from pytest_ssd.steady.fio_native import FioSteadyRule
from pytest_ssd.workloads.limits import Limits

KiB, MiB = 1 << 10, 1 << 20
IOENGINE = "io_uring"
#: the steady states the two halves of the flow measure in
SEQ_STEADY = "ss(seq-128k-write-qd256)"
RND_STEADY = "ss(rnd-4k-write-qd256)"
#: WIPC (and WDPC) writes this many times the span before steady state is looked for
WIPC_FACTOR = 2
#: 512 B ... 1 MiB
BLOCK_SIZES = tuple(512 << n for n in range(12))
#: 1 ... 256
QUEUE_DEPTHS = tuple(1 << n for n in range(9))
#: the QD of block-size sweeps *(choice: the seeds do not say; QD32 is the datasheets' point)*
BS_SWEEP_QD = 32
#: the usual datasheet point of RND reads and writes: 4 workers x QD32
WORKERS_POINT = (4, 32)
#: the 70/30 mix by QD and the QoS mix
MIXED_READ_PCT = 70
#: the block size of QD sweeps, mixes and QoS per pattern
QD_BLOCK = {"seq": 128 * KiB, "rnd": 4 * KiB}

#: phases of the dut_state marker: the SEQ half first, then the RND half
SEQ_PHASE, RND_PHASE = 1, 2
#: purge (with its 15-minute rest) -> WIPC -> SEQ WDPC; leaves the SEQ steady state
SEQ_PRECONDITION = pytest.mark.dut_state("fob", pristine=True, leaves=SEQ_STEADY, phase=SEQ_PHASE)
#: from the SEQ steady state: RND 2 x span, then to steady state; runs after the SEQ tests
RND_PRECONDITION = pytest.mark.dut_state(SEQ_STEADY, leaves=RND_STEADY, phase=SEQ_PHASE)
SEQ_STATE = pytest.mark.dut_state(SEQ_STEADY, phase=SEQ_PHASE)
RND_STATE = pytest.mark.dut_state(RND_STEADY, phase=RND_PHASE)


@dataclass(frozen=True)
class EsdTiming:
    """Durations of the enterprise flow under one profile."""

    #: every measurement: ramp, then measured time (seed 001: 30 s and 5 minutes)
    ramp_s: float
    measure_s: float
    #: bandwidth and latency log interval of the preconditioning
    log_ms: int
    #: the QoS measurements at QD1 (time based like every measurement)
    qos_ramp_s: float
    qos_s: float


#: quick: 0.2 s ramp and 0.5 s per point (a sweep of 12 points in about 12 s on scratch),
#: 2 s per QoS workload (p99.99 resolved from about 10,000 I/Os)
TIMING = {
    "full": EsdTiming(ramp_s=30.0, measure_s=300.0, log_ms=1000, qos_ramp_s=30.0, qos_s=300.0),
    "quick": EsdTiming(ramp_s=0.2, measure_s=0.5, log_ms=100, qos_ramp_s=0.2, qos_s=2.0),
}


def timing(profile: Profile) -> EsdTiming:
    return TIMING[profile.name]


@dataclass(frozen=True)
class Precondition:
    """WIPC and WDPC of one half of the flow, in one fio process, logged."""

    workload: Workload
    wipc: FioJob
    wdpc: FioJob
    rule: FioSteadyRule

    @property
    def jobs(self) -> tuple[FioJob, FioJob]:
        return self.wipc, self.wdpc


def precondition(state: str, span: int, profile: Profile) -> Precondition:
    """The jobs that bring a purged (or otherwise steady) span to *state*'s steady state.

    WIPC: the workload over 2 x the span; WDPC: the same until fio's steady state,
    at most :data:`STEADY_CAP_FACTOR` x the span.
    """
    workload = parse_workload(state.removeprefix("ss(").removesuffix(")"))
    rule = FioSteadyRule(duration_s=profile.ss_duration)
    log_ms = timing(profile).log_ms
    common = {"size": span, "ioengine": IOENGINE, "log_avg_ms": log_ms, "percentiles": ()}
    wipc = workload.job(f"wipc-{workload.pattern}", io_bytes=WIPC_FACTOR * span, **common)
    wdpc = workload.job(
        f"wdpc-{workload.pattern}",
        io_bytes=STEADY_CAP_FACTOR * span,
        extra=rule.options(),
        **common,
    )
    return Precondition(workload, wipc, wdpc, rule)


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its x value, its job, or why it is skipped."""

    x: int
    job: FioJob
    skipped: str | None = None


@dataclass(frozen=True)
class Sweep:
    """A sweep: the points of one curve (by block size or by QD) of one pattern and direction."""

    name: str
    title: str
    axis: str
    points: tuple[Point, ...]

    @property
    def skipped(self) -> dict[str, str]:
        return {p.job.name: p.skipped for p in self.points if p.skipped is not None}


def _direction(read_pct: int) -> str:
    return {100: "read", 0: "write"}.get(read_pct, f"{read_pct}r")


def _job(
    name: str, pattern: Pattern, shape: tuple[int, int, int, int], span: int, row: EsdTiming
) -> FioJob:
    block_size, iodepth, numjobs, read_pct = shape
    return FioJob(
        name=name,
        pattern=pattern,
        block_size=block_size,
        iodepth=iodepth,
        numjobs=numjobs,
        read_pct=read_pct,
        size=span,
        runtime_s=row.measure_s,
        ramp_s=row.ramp_s,
        ioengine=IOENGINE,
    )


def by_block_size(
    pattern: Pattern, read_pct: int, span: int, row: EsdTiming, limits: Limits
) -> Sweep:
    """512 B ... 1 MiB at :data:`BS_SWEEP_QD`."""
    direction = _direction(read_pct)
    points = []
    for bs in BLOCK_SIZES:
        job = _job(
            f"{pattern}-{direction}-bs{format_bytes(bs)}",
            pattern,
            (bs, BS_SWEEP_QD, 1, read_pct),
            span,
            row,
        )
        points.append(Point(bs, job, limits.skip(job)))
    title = f"{pattern.upper()} {direction} by block size, QD{BS_SWEEP_QD}"
    return Sweep(f"{pattern}-{direction}-bs", title, "block size", tuple(points))


def by_queue_depth(
    pattern: Pattern,
    read_pct: int,
    span: int,
    row: EsdTiming,
    limits: Limits,
    *,
    workers: Sequence[tuple[int, int]] = (),
) -> Sweep:
    """QD 1 ... 256 at the pattern's block size; *workers* adds (numjobs, QD) points."""
    direction = _direction(read_pct)
    bs = QD_BLOCK[pattern]
    shapes = [(1, qd) for qd in QUEUE_DEPTHS] + list(workers)
    points = []
    for numjobs, qd in shapes:
        threads = f"t{numjobs}" if numjobs > 1 else ""
        job = _job(
            f"{pattern}-{direction}-qd{qd}{threads}",
            pattern,
            (bs, qd, numjobs, read_pct),
            span,
            row,
        )
        points.append(Point(qd * numjobs, job, limits.skip(job)))
    title = f"{pattern.upper()} {format_bytes(bs)} {direction} by QD"
    return Sweep(f"{pattern}-{direction}-qd", title, "outstanding I/Os", tuple(points))


#: QoS workloads at QD1: (name, read share)
QOS_MIXES = (("qos-read", 100), ("qos-write", 0), ("qos-70r", MIXED_READ_PCT))
#: the QoS table (datasheets quote typical = mean, p99, p99.99)
QOS_NINES = (99.0, 99.99)


def qos_jobs(span: int, row: EsdTiming, limits: Limits) -> list[Point]:
    """RND 4 KiB QD1 read, write and 70 % read over the span, time based."""
    timed = EsdTiming(row.qos_ramp_s, row.qos_s, row.log_ms, row.qos_ramp_s, row.qos_s)
    points = []
    for name, read_pct in QOS_MIXES:
        job = _job(name, "rnd", (QD_BLOCK["rnd"], 1, 1, read_pct), span, timed)
        points.append(Point(read_pct, job, limits.skip(job)))
    return points
