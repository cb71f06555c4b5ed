"""The consumer suite's section (``suites/csd``, METHOD §4): every drive on every graph.

In the method's order: quick profiles per device state, the fill drive and the
full-span read, sync writes, low QD by read share, percentile and tail
latency.  Each part draws the drives whose results compare (same test, same
workload shape) in their palette colours, and notes under it which drives
were left out and why.  The suite's states carry no steady-state verdicts, so
there is no steady-state part.
"""

from __future__ import annotations

from pytest_ssd.methods.csd.report.common import Drives, Part
from pytest_ssd.methods.csd.report.fill import fill_drive
from pytest_ssd.methods.csd.report.latency import latency
from pytest_ssd.methods.csd.report.lowqd import low_qd
from pytest_ssd.methods.csd.report.profiles import quick_profiles, sync_writes
from pytest_ssd.report.sections.base import Context, ReportSection, Section, notes

ID = "ssd-suite-csd"
TITLE = "Consumer SSD suite (suites/csd)"
#: the parts in the method's order (METHOD §4.1 quick profiles, §4.2 fill, §4.3-4.5)
PARTS = (quick_profiles, fill_drive, sync_writes, low_qd, latency)


def section(ctx: Context) -> Section | None:
    """The comparison of every drive's consumer-suite results; None when no drive has any."""
    drives = Drives(ctx)
    if not drives.all:
        return None
    parts: list[Part] = [part for build in PARTS if (part := build(drives)) is not None]
    without = [
        f"{drives.name(d)}: no results from suites/csd"
        for d in ctx.drives
        if not any(d is kept for kept in drives.all)
    ]
    body = notes(without) + "".join(part.html() for part in parts)
    return Section(ID, TITLE, body)


#: the method's section of the report, declared by its hook (:mod:`pytest_ssd.methods.csd`)
SECTION = ReportSection(
    suite="csd",
    title=TITLE,
    build=section,
    order=20,
    kinds=(
        "cdm-*",
        "fill",
        "fill-speed",
        "speed-read",
        "sync-writes",
        "lowqd-point",
        "tail-latency",
    ),
)
