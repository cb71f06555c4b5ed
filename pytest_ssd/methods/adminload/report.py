"""The admin-load section: per drive, its figure and a table of each percentile's verdict.

Redrawn from the results database: the derived records ``admin-load`` of suites/qual.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Sequence
from typing import Any

from pytest_ssd.methods.adminload.figures import Group, polling_cost
from pytest_ssd.methods.adminload.workloads import KIND
from pytest_ssd.report.sections.base import Context, ReportSection, Section, table

ID = "ssd-suite-qual-admin-load"
TITLE = "Admin commands under load (suites/qual)"
HEADER = [
    "QD",
    "polling",
    "achieved",
    "percentile",
    "without (median)",
    "with (median)",
    "verdict",
    "detail",
]


def _median(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):,.0f} µs" if known else "n/r"


def _rows(values: dict[str, Any]) -> list[list[str]]:
    rates = [p["rate"] for p in values["pollers"]]
    achieved = f"{min(rates):.2g}–{max(rates):.2g}/s" if rates else "—"
    return [
        [
            f"{values['qd']}",
            f"{values['rate']:g}/s",
            achieved,
            f"p{p['percentile']:g}",
            _median(p["unpolled_us"]),
            _median(p["polled_us"]),
            html.escape(p["verdict"]),
            html.escape(p["detail"]),
        ]
        for p in values["percentiles"]
    ]


def _groups(records: Sequence[dict[str, Any]]) -> list[Group]:
    return [
        Group(
            f"QD{v['qd']} {v['rate']:g}/s p{p['percentile']:g}",
            tuple(p["unpolled_us"]),
            tuple(p["polled_us"]),
            p["verdict"],
        )
        for v in records
        for p in v["percentiles"]
    ]


def section(ctx: Context) -> Section | None:
    """A figure and a table per drive that ran the admin-load tests; None when none did."""
    found = ctx.derived(KIND)
    if not found:
        return None
    parts = []
    for drive in ctx.drives:
        records = [r.values for d, r in found if d is drive]
        if not records:
            continue
        label = drive.drive.label
        title = "p99 and p99.9 without and with admin polling"
        drawn = polling_cost(_groups(records), ctx.palette.colour(label), title)
        figure = ctx.figures.html(drawn, f"{label}: {title}")
        rows = [row for values in records for row in _rows(values)]
        health = records[0].get("health_interval_s")
        note = (
            "Without polling, the session's own health sampling still reads the smart-log"
            f" every {health:g} s (--ssd-health-interval=0 for none)."
            if records[0].get("health_active") and health
            else "No health sampling ran beside the reads."
        )
        parts.append(
            f"<h3>{html.escape(label)}</h3>{figure}{table(HEADER, rows)}<p>{html.escape(note)}</p>"
        )
    return Section(ID, TITLE, "".join(parts))


#: the section, declared by the method's hook (:mod:`pytest_ssd.methods.adminload`)
SECTION = ReportSection(suite="qual", title=TITLE, build=section, order=72, kinds=(KIND,))
