"""The site's input: each series' traces (a drive, direction and metric) across builds."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_ssd.db.conn import Conn
from pytest_ssd.db.history import FoundSeries, find_series, history
from pytest_ssd.results.history import HistoryRow, drive_of
from pytest_ssd.text import latency_unit

#: the metrics a trace shows: (the verdicts' metric name, the label on the axis)
METRICS = {"iops": "IOPS", "p99_us": "p99 latency"}


@dataclass(frozen=True)
class BuildPoint:
    """One build of a trace: its repeats over the build's runs (unscaled: IOPS or µs)."""

    build: str
    values: tuple[float, ...]
    runs: tuple[str, ...]
    last: str


@dataclass(frozen=True)
class Trace:
    """One drive's direction and metric of a series across its builds, oldest first."""

    drive: str
    label: str
    direction: str
    metric: str
    points: tuple[BuildPoint, ...]

    @property
    def name(self) -> str:
        return f"{self.label} {self.direction} {METRICS[self.metric]}"

    def unit(self) -> tuple[str, float]:
        """The unit its values are shown in, as the report scales them, and the divisor."""
        if self.metric == "iops":
            return "IOPS", 1.0
        found = [v for p in self.points for v in p.values]
        unit, factor, _ = latency_unit(statistics.median(found) if found else 1.0)
        return unit, factor


@dataclass(frozen=True)
class SiteSeries:
    """A series of the database and its traces."""

    found: FoundSeries
    traces: tuple[Trace, ...]
    model: str
    #: (run id, build, drive label, run start) of each run of the series
    runs: tuple[tuple[str, str, str, str], ...]


def read_series(conn: Conn) -> list[SiteSeries]:
    """Every series of the database with its traces."""
    return [_series(s, history(conn, *s.keys)) for s in find_series(conn)]


def _series(found: FoundSeries, rows: Sequence[HistoryRow]) -> SiteSeries:
    traces = []
    for drive in dict.fromkeys(drive_of(r) for r in rows):
        mine = [r for r in rows if drive_of(r) == drive]
        for direction in dict.fromkeys(r.direction for r in mine):
            for metric in METRICS:
                points = _points([r for r in mine if r.direction == direction], metric)
                if points:
                    traces.append(Trace(drive, mine[0].label, direction, metric, points))
    runs = tuple(dict.fromkeys((r.run_id, r.shown_build, r.label, r.run_start) for r in rows))
    return SiteSeries(found, tuple(traces), found.identity.model or "?", runs)


def _points(rows: Sequence[HistoryRow], metric: str) -> tuple[BuildPoint, ...]:
    points = []
    for build in dict.fromkeys(r.shown_build for r in rows):
        mine = [r for r in rows if r.shown_build == build]
        each = [r.iops_each if metric == "iops" else r.p99_each for r in mine]
        values = tuple(float(v) for vs in each for v in vs if v is not None)
        if values:
            runs = tuple(dict.fromkeys(r.run_id for r in mine))
            points.append(BuildPoint(build, values, runs, max(r.run_start for r in mine)))
    return tuple(points)
