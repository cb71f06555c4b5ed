"""How a spec line is measured: the state to reach, the fio job, and the figure to read.

A datasheet suite is then a loop: reach ``plan.state``, run ``plan.job``,
and check :func:`measured` of its result with the line's :class:`SpecCheck`.
:func:`measured` gives a :class:`Reading`: the figure, and for a percentile
whether the sample resolves it (a p99.99 of 247 I/Os is the slowest I/O seen,
and no verdict is drawn from it).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.errors import ParseError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.results import DEFAULT_PERCENTILES, DirectionResult, JobResult, ios_to_resolve
from pytest_ssd.specs.model import SpecLine
from pytest_ssd.specs.units import BASE, Quantity
from pytest_ssd.state.spec import StateSpec

#: seed 001 measures 5 minutes after a 30-second ramp
RUNTIME_S = 300.0
RAMP_S = 30.0


@dataclass(frozen=True)
class Reading:
    """A line's figure as measured; ``needs`` I/Os when the sample cannot resolve it."""

    quantity: Quantity
    samples: int | None = None
    needs: int | None = None

    @property
    def resolved(self) -> bool:
        return self.needs is None

    def why_not(self, line: SpecLine) -> str:
        """'p99.99 needs ≥ 10,000 I/Os, had 247' (empty when resolved)."""
        if self.needs is None:
            return ""
        return f"p{line.metric.percentile:g} needs ≥ {self.needs:,} I/Os, had {self.samples:,}"


@dataclass(frozen=True)
class Plan:
    """What measuring one spec line takes: the device state and the fio job."""

    line: SpecLine
    state: StateSpec
    job: FioJob


def plan(
    line: SpecLine,
    *,
    runtime_s: float = RUNTIME_S,
    ramp_s: float = RAMP_S,
    ioengine: str = "libaio",
) -> Plan:
    """The state and the fio job (over the whole device) that measure *line*."""
    percentiles = DEFAULT_PERCENTILES
    wanted = line.metric.percentile
    if wanted is not None and wanted not in percentiles:
        percentiles = tuple(sorted((*percentiles[1:], wanted)))
    job = FioJob(
        name=line.id,
        pattern=line.pattern,
        block_size=line.block_size,
        iodepth=line.qd,
        numjobs=line.jobs,
        read_pct=line.read_pct,
        runtime_s=runtime_s,
        ramp_s=ramp_s,
        ioengine=ioengine,
        percentiles=percentiles,
    )
    return Plan(line, line.state, job)


def measured(line: SpecLine, result: JobResult) -> Reading:
    """The figure *line* is about, read from fio's *result* (a mixed line sums both directions)."""
    names = {"read": ("read",), "write": ("write",)}.get(line.direction, ("read", "write"))
    directions = [_direction(result, name) for name in names]
    dimension = line.metric.dimension
    if dimension == "throughput":
        return Reading(Quantity(sum(d.bw_bytes_s for d in directions), BASE[dimension]))
    if dimension == "iops":
        return Reading(Quantity(sum(d.iops for d in directions), BASE[dimension]))
    return _latency(line, result.name, directions[0])


def _direction(result: JobResult, name: str) -> DirectionResult:
    found = result.directions.get(name)
    if found is None:
        raise ParseError(f"fio job {result.name!r} has no {name} results")
    return found


def _latency(line: SpecLine, job: str, direction: DirectionResult) -> Reading:
    base = BASE[line.metric.dimension]
    percentile = line.metric.percentile
    if percentile is not None:
        if direction.clat is None:
            raise ParseError(f"fio job {job!r} has no completion latencies")
        value = direction.clat.percentile(percentile)
        needs = None if value.resolved else ios_to_resolve(percentile)
        return Reading(Quantity(value.ns, base), direction.clat.samples, needs)
    mean = direction.lat_mean_ns
    if mean is None and direction.clat is not None:
        mean = direction.clat.mean_ns
    if mean is None:
        raise ParseError(f"fio job {job!r} has no latency mean")
    return Reading(Quantity(mean, base))
