"""The enterprise suite's section (``suites/esd``, METHOD §5): every drive on every graph.

In the flow's order: the SEQ preconditioning (full and close up) and its
table, the SEQ sweeps, the RND preconditioning, the RND sweeps and the 70/30
mix, then QoS at QD1 (nines graph per workload and the datasheet table:
typical, p99, p99.99).  Everything is read from the derived records and series
the tests stored (:mod:`pytest_ssd.methods.esd.run`); a drive without them
is listed under the part with the reason.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_ssd.db import DriveResults, Series
from pytest_ssd.figures.latency import LatencySample
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.methods.esd import figures as figs
from pytest_ssd.methods.esd.analysis import POINT_RECORD
from pytest_ssd.report.sections.base import (
    Context,
    KeyFigure,
    ReportSection,
    Section,
    notes,
    row,
    table,
)
from pytest_ssd.report.sections.keyresults import number, records, steady_text
from pytest_ssd.text import latency, significant

ID = "ssd-suite-esd"
TITLE = "Enterprise SSD suite (suites/esd)"
ESD = "esd/"
#: (derived record, heading) of the sweeps in the flow's order
SWEEPS = {
    "seq": ("seq-read-bs", "seq-write-bs", "seq-read-qd", "seq-write-qd"),
    "rnd": ("rnd-read-bs", "rnd-write-bs", "rnd-read-qd", "rnd-write-qd", "rnd-70r-qd"),
}
QOS_WORKLOADS = (
    ("qos-read", "RND 4 KiB QD1 read"),
    ("qos-write", "RND 4 KiB QD1 write"),
    ("qos-70r", "RND 4 KiB QD1 70 % read"),
)


def _e(value: object) -> str:
    return html.escape("—" if value is None else str(value))


class EsdDrives:
    """The drives with enterprise-suite results, their legend names and colours."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.all = [d for d in ctx.drives if any(r.test.startswith(ESD) for r in d.derived)]
        self.colours = {self.name(d): ctx.palette.colour(d.drive.label) for d in self.all}
        self.missing: list[str] = []

    def name(self, drive: DriveResults) -> str:
        return drive.drive.label

    def derived(self, drive: DriveResults, name: str) -> tuple[str, dict[str, Any]] | None:
        """(node id, values) of the drive's derived record *name* from suites/esd."""
        for record in drive.derived:
            if record.name == name and record.test.startswith(ESD):
                return record.test, record.values
        return None

    def having(self, name: str, what: str) -> list[tuple[DriveResults, str, dict[str, Any]]]:
        found = []
        for drive in self.all:
            record = self.derived(drive, name)
            if record is None:
                self.missing.append(f"{self.name(drive)}: no {what} ({name})")
            else:
                found.append((drive, *record))
        return found


def _series(drive: DriveResults, test: str, name: str) -> Series | None:
    return next((s for s in drive.series if s.test == test and s.name == name), None)


def _floats(values: object) -> figs.Floats:
    return np.asarray(values, dtype=np.float64)


def _precondition(drives: EsdDrives, pattern: str) -> str:
    found = drives.having(f"precondition-{pattern}", f"{pattern.upper()} preconditioning")
    logs, rows = [], []
    for drive, test, values in found:
        stored = _series(drive, test, f"precondition-{pattern}")
        if stored is not None:
            meta, arrays = stored.meta, stored.arrays
            window = tuple(meta.get("window") or ())
            logs.append(
                figs.PreconditionLog(
                    drives.name(drive),
                    _floats(arrays["t_s"]),
                    _floats(arrays["value"]),
                    _floats(arrays["lat_us"]),
                    str(meta.get("unit")),
                    float(meta.get("wdpc_start_s", 0.0)),
                    (float(window[0]), float(window[1])) if len(window) == 2 else None,
                )
            )
        rows.append(
            [
                _e(drives.name(drive)),
                _e(values.get("workload")),
                f"{values['wipc_bytes'] / 2**30:,.1f} GiB in {significant(values['wipc_s'])} s",
                f"{values['wdpc_bytes'] / 2**30:,.1f} GiB in {significant(values['wdpc_s'])} s",
                f"{values['wdpc_cap_bytes'] / 2**30:,.1f} GiB",
                _attained(values),
                _e(values.get("summary")),
            ]
        )
    if not rows:
        return ""
    body = f"<h3>{pattern.upper()} preconditioning</h3>"
    if logs:
        title = f"{pattern.upper()} preconditioning"
        whole = figs.precondition_figure(logs, title, drives.colours)
        zoom = figs.precondition_zoom(logs, title, drives.colours)
        body += row(
            drives.ctx.figures.html(whole, f"esd precondition {pattern}"),
            drives.ctx.figures.html(zoom, f"esd precondition {pattern} zoom"),
        )
    header = ["drive", "workload", "WIPC", "WDPC", "WDPC cap", "steady state", "fio's verdict"]
    return body + table(header, rows)


def _attained(values: dict[str, Any]) -> str:
    if values["attained"]:
        return "yes"
    if str(values.get("summary", "")).startswith("not judged"):
        return "not judged"
    return "<b>no</b> (cap)"


def _points(drive: DriveResults, name: str) -> list[dict[str, Any]]:
    """The drive's point records of sweep *name*, in the sweep's order."""
    found = [
        r.values
        for r in drive.derived
        if r.name == POINT_RECORD and r.test.startswith(ESD) and r.values.get("sweep") == name
    ]
    return sorted(found, key=lambda values: int(values["index"]))


def _curve(label: str, points: list[dict[str, Any]]) -> tuple[figs.SweepCurve, list[str]]:
    """The sweep's curve: a point that was skipped or did not run is a gap (NaN); why."""
    xs = [int(x) for x in points[0]["xs"]]
    ys, workers, gaps = [math.nan] * len(xs), [1] * len(xs), []
    for values in points:
        index = int(values["index"])
        workers[index] = int(values.get("workers", 1))
        if "value" in values:
            ys[index] = float(values["value"])
        else:
            gaps.append(f"{values['job']} skipped: {values.get('skipped')}")
    measured = {int(v["index"]) for v in points}
    missing = len(xs) - len(measured)
    if missing:
        gaps.append(f"{missing} of {len(xs)} points did not run")
    return figs.SweepCurve(label, tuple(xs), tuple(ys), workers=tuple(workers)), gaps


def _sweep(drives: EsdDrives, name: str) -> str:
    curves, title, axis, unit = [], name, "", ""
    for drive in drives.all:
        points = _points(drive, name)
        if not points:
            drives.missing.append(f"{drives.name(drive)}: no sweep ({name})")
            continue
        title, axis, unit = points[0]["title"], points[0]["axis"], points[0]["unit"]
        curve, gaps = _curve(drives.name(drive), points)
        curves.append(curve)
        drives.missing += [f"{drives.name(drive)}: {title}: {gap}" for gap in gaps]
    if not curves:
        return ""
    xs = sorted({x for c in curves for x in c.xs})
    label: Callable[[int], str] = format_bytes if axis == "block size" else str
    rows = [[_e(c.label), *(_cell(c, x, unit) for x in xs)] for c in curves]
    fig = figs.sweep_figure(curves, title, axis, unit, drives.colours)
    header = [f"{_e(unit)} \\ {_e(axis)}", *(label(x) for x in xs)]
    return row(drives.ctx.figures.html(fig, f"esd {name}"), table(header, rows))


def _cell(curve: figs.SweepCurve, x: int, unit: str) -> str:
    if x not in curve.xs or math.isnan(curve.ys[curve.xs.index(x)]):
        return "—"
    value = curve.ys[curve.xs.index(x)]
    return f"{value:,.0f}" if unit == "IOPS" else f"{value:,.1f}"


def _qos(drives: EsdDrives) -> str:
    found = drives.having("qos", "QoS")
    if not found:
        return ""
    figures, rows = [], []
    for name, heading in QOS_WORKLOADS:
        curves = []
        for drive, test, values in found:
            numbers = values.get(name)
            if numbers is None:
                why = values.get("skipped", {}).get(name, "not measured")
                drives.missing.append(f"{drives.name(drive)}: {heading}: {why}")
                continue
            cells = [_latency(numbers.get(k)) for k in ("mean_us", "p99_us", "p99.99_us")]
            rows.append([_e(heading), _e(drives.name(drive)), f"{numbers['ios']:,}", *cells])
            sample = _sample(drive, test, name)
            if sample is not None:
                curves.append(figs.QosCurve(drives.name(drive), sample, numbers["mean_us"]))
        if curves:
            fig = figs.qos_figure(curves, f"QoS: {heading}", drives.colours)
            figures.append(drives.ctx.figures.html(fig, f"esd {name}"))
    # each latency in its unit (716.8 µs, 2.21 ms, 2.16 s), as the results table writes it
    header = [
        "workload",
        "drive",
        "I/Os",
        "typical (mean) latency",
        "p99 latency",
        "p99.99 latency",
    ]
    return "<h3>QoS at QD1</h3>" + row(*figures, table(header, rows))


def _latency(us: float | None) -> str:
    return "n/r" if us is None else latency(us)


def _sample(drive: DriveResults, test: str, name: str) -> LatencySample | None:
    """The workload's histograms (every direction) merged, from the stored series."""
    pairs: list[tuple[int, int]] = []
    for direction in ("read", "write"):
        stored = _series(drive, test, f"{name}.clat-{direction}")
        if stored is not None:
            pairs += zip(stored.arrays["ns"].tolist(), stored.arrays["count"].tolist(), strict=True)
    return LatencySample.of_bins(name, 0.0, pairs) if pairs else None


def section(ctx: Context) -> Section | None:
    """Every drive's enterprise-suite results compared; None when no drive has any."""
    drives = EsdDrives(ctx)
    if not drives.all:
        return None
    body = ""
    for pattern in ("seq", "rnd"):
        body += _precondition(drives, pattern)
        body += f"<h3>{pattern.upper()} performance</h3>"
        body += "".join(_sweep(drives, name) for name in SWEEPS[pattern])
    body += _qos(drives)
    without = [
        f"{d.drive.label}: no results from suites/esd"
        for d in ctx.drives
        if not any(d is kept for kept in drives.all)
    ]
    return Section(ID, TITLE, notes(without) + body + notes(drives.missing))


def headline(ctx: Context, drive: DriveResults) -> list[KeyFigure]:
    """The enterprise suite: steady-state IOPS (RND) and MiB/s (SEQ), QoS p99.99 at QD1."""
    found = []
    for record in records(ctx, drive, "precondition-*"):
        v = record.values
        rnd = record.name.endswith("-rnd")
        value = number(
            v.get("steady_mean_iops" if rnd else "steady_mean_mib_s"), "IOPS" if rnd else "MiB/s"
        )
        what = f"{'RND' if rnd else 'SEQ'} steady state"
        found.append(
            KeyFigure(what, value, f"{v.get('workload', '')}, {steady_text(v.get('attained'))}")
        )
    for record in records(ctx, drive, "qos"):
        for job, values in sorted(record.values.items()):
            us = values.get("p99.99_us") if isinstance(values, dict) else None
            if us is not None:  # the QoS figure datasheets give
                found.append(KeyFigure("QoS p99.99", latency(float(us)), f"{job}, RND 4 KiB QD1"))
    return found


#: the method's section of the report, declared by its hook (:mod:`pytest_ssd.methods.esd`)
SECTION = ReportSection(
    suite="esd",
    title=TITLE,
    build=section,
    order=30,
    kinds=("precondition-*", "qos", "esd-point"),
    headline=headline,
)
