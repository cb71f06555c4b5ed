"""The site's input: each series' traces (a drive, direction and metric) across builds."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_ssd.db.conn import Conn
from pytest_ssd.db.history import FoundSeries, find_series, history
from pytest_ssd.documents import loads_json
from pytest_ssd.results.history import HistoryRow, drive_of
from pytest_ssd.specs.units import convert
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
    #: the drive's datasheet figure for this metric (IOPS or µs), where its runs checked one
    datasheet: float | None = None

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
    #: the suites its tests belong to (what their conftest.py declares)
    suites: tuple[str, ...] = ()


#: the datasheet metric (a conformance row's) each trace's metric is drawn against, and the
#: unit the trace's values are in
SPEC_METRICS = {"iops": ("iops", "IOPS"), "p99_us": ("latency-p99", "µs")}


def read_series(conn: Conn) -> list[SiteSeries]:
    """Every series of the database with its traces."""
    return [
        replace(
            _series(s, history(conn, *s.keys), datasheet_lines(conn, s.keys)),
            suites=suites_of(conn, s.keys),
        )
        for s in find_series(conn)
    ]


def suites_of(conn: Conn, keys: Sequence[str]) -> tuple[str, ...]:
    """The suites of the tests that measured the series (a test's suite: ``tests.suite``)."""
    rows = conn.execute(
        "SELECT DISTINCT t.suite FROM measurements m"
        " JOIN tests t ON t.run_id = m.run_id AND t.nodeid = m.test"
        f" WHERE m.series_key IN ({_marks(keys)}) AND t.suite IS NOT NULL ORDER BY t.suite",
        tuple(keys),
    ).fetchall()
    return tuple(r["suite"] for r in rows)


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" for _ in values)


def datasheet_lines(conn: Conn, keys: Sequence[str]) -> dict[tuple[str, str], float]:
    """(drive label, trace metric): the datasheet figure the newest run of the series checked
    (a conformance row of the test that measured it); none where its test checked several
    of one metric (which point each was is not recorded) or a per-TB figure."""
    rows = conn.execute(
        'SELECT v.run_id, d.label, v."row" FROM verdicts v JOIN runs r ON r.id = v.run_id'
        " JOIN run_devices d ON d.run_id = v.run_id AND d.dut_id = v.dut_id"
        " WHERE EXISTS (SELECT 1 FROM measurements m WHERE m.run_id = v.run_id"
        " AND m.dut_id = v.dut_id AND m.test = v.test"
        f" AND m.series_key IN ({_marks(keys)}))"
        " ORDER BY r.start, v.id",
        tuple(keys),
    ).fetchall()
    found: dict[tuple[str, str, str], list[float]] = {}
    for row in rows:
        line = loads_json(row["row"])
        for metric, (spec_metric, unit) in SPEC_METRICS.items():
            drawn = line.get("spec") is not None and not line.get("per_tb")
            if line.get("metric") == spec_metric and drawn:
                value = convert(float(line["spec"]), str(line["unit"]), unit)
                found.setdefault((row["run_id"], row["label"], metric), []).append(value)
    newest: dict[tuple[str, str], float | None] = {}
    for (_, label, metric), values in found.items():  # oldest run first: the newest wins
        newest[label, metric] = values[0] if len(set(values)) == 1 else None
    return {k: v for k, v in newest.items() if v is not None}


def _series(
    found: FoundSeries, rows: Sequence[HistoryRow], lines: dict[tuple[str, str], float]
) -> SiteSeries:
    traces = []
    for drive in dict.fromkeys(drive_of(r) for r in rows):
        mine = [r for r in rows if drive_of(r) == drive]
        directions = list(dict.fromkeys(r.direction for r in mine))
        label = mine[0].label
        for direction in directions:
            for metric in METRICS:
                points = _points([r for r in mine if r.direction == direction], metric)
                # a line is one direction's: drawn where the point measured one
                line = lines.get((label, metric)) if len(directions) == 1 else None
                if points:
                    traces.append(Trace(drive, label, direction, metric, points, line))
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
