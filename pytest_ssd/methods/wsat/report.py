"""The write-saturation section (``suites/wsat``, METHOD §6): every drive on the same graphs.

Per workload: IOPS against time and against total GiB written, each drive in
its colour with its steady-state region shaded (the SNIA rule over rounds of
time), and a table of what ended each run (4 x capacity or the time cap), the
bytes written against the capacity, mean IOPS overall and in the steady region,
and the rule's verdict.  Redrawn from the results database: the derived record
``wsat-<workload>`` and the series of the same name.
"""

from __future__ import annotations

import html
from typing import Any

from pytest_ssd.db import DriveResults
from pytest_ssd.methods.wsat.figures import WsatCurve, iops_vs_time, iops_vs_written
from pytest_ssd.report.sections.base import (
    Context,
    KeyFigure,
    ReportSection,
    Section,
    derived_records,
    notes,
    row,
    table,
)
from pytest_ssd.report.sections.keyresults import number, records

ID = "ssd-suite-wsat"
TITLE = "Write saturation (suites/wsat)"
WSAT = "wsat/"
GiB = 1 << 30
HEADER = [
    "drive",
    "ended by",
    "GiB written",
    "× capacity",
    "time (s)",
    "mean IOPS",
    "steady IOPS",
    "steady state (SNIA rule over rounds)",
]


def _row(label: str, v: dict[str, Any]) -> list[str]:
    steady = v["steady_iops"]
    return [
        html.escape(label),
        html.escape(v["ended_by"]),
        f"{v['written_bytes'] / GiB:,.2f}",
        f"{v['written_capacities']:.2f}",
        f"{v['runtime_s']:,.1f}",
        f"{v['iops']:,.0f}",
        "—" if steady is None else f"{steady:,.0f}",
        html.escape(v["region"]["summary"]),
    ]


def section(ctx: Context) -> Section | None:
    """Both WSAT workloads across the drives that ran them; None when none did."""
    found = derived_records(ctx.drives, "wsat-", WSAT)
    if not found:
        return None
    parts, left_out = [], []
    for name, runs in found.items():
        curves, rows = [], []
        for drive, record in runs:
            label, values = drive.drive.label, record.values
            series = next(
                (s for s in drive.series if s.test == record.test and s.name == name), None
            )
            rows.append(_row(label, values))
            if series is None:
                left_out.append(f"{label}: {name}: no log stored")
                continue
            colour = ctx.palette.colour(label)
            curves.append(WsatCurve.of_series(label, colour, values, series.arrays))
        title = runs[0][1].values["title"]
        graphs = ((iops_vs_time, "iops vs time"), (iops_vs_written, "iops vs written"))
        body = row(
            *(ctx.figures.html(draw(curves, title), f"{name} {what}") for draw, what in graphs)
            if curves
            else ()
        )
        parts.append(f"<h3>{html.escape(title)}</h3>{body}{table(HEADER, rows)}")
    return Section(ID, TITLE, notes(left_out) + "".join(parts))


def headline(ctx: Context, drive: DriveResults) -> list[KeyFigure]:
    """Write saturation: the steady IOPS of each workload (none: not reached)."""
    return [
        KeyFigure(
            f"{r.values.get('title', r.name)}: steady IOPS",
            number(r.values.get("steady_iops"), "IOPS"),
            f"ended by {r.values.get('ended_by', '?')}",
        )
        for r in records(ctx, drive, "wsat-*")
    ]


#: the method's section of the report, declared by its hook (:mod:`pytest_ssd.methods.wsat`)
SECTION = ReportSection(
    suite="wsat", title=TITLE, build=section, order=50, kinds=("wsat-*",), headline=headline
)
