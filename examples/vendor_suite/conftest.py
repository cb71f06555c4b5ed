"""A vendor's own suite beside pytest-ssd's: its name, its report section, its figure.

Everything here goes through pytest-ssd's public API (``from pytest_ssd
import ...``) and its hooks, so it runs from any folder:

    pytest examples/vendor_suite --dut=/dev/nvme0n1 --ssd-confirm=/dev/nvme0n1 \
        --datasheet=examples/vendor_suite/datasheet.toml

Without ``--dut`` it measures a scratch loop device (add ``--datasheet-force``
to check the example datasheet against it).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from pytest_ssd import Context, FigureKind, Measurement, ReportSection, Section, notes, table

if TYPE_CHECKING:  # drawn where the report is written: matplotlib is imported there
    from matplotlib.figure import Figure

#: the suite's name: each test's records carry it, and the section below draws them
pytest_ssd_suite = "vendor"

#: what the tests record (``ssd.derive(KIND, values)``) and the section draws
KIND = "vendor-acceptance"


def pytest_ssd_report_sections() -> list[ReportSection]:
    """pytest-ssd's hook: this suite's section of the report."""
    section = ReportSection(
        suite="vendor",
        title="Vendor acceptance (examples/vendor_suite)",
        build=acceptance,
        kinds=(KIND,),
    )
    return [section]


def pytest_ssd_figure_kinds() -> list[FigureKind]:
    """pytest-ssd's hook: the figures ``ssd.plot(kind, measurement, title)`` draws for it."""
    return [FigureKind("vendor_iops", iops_bars)]


def iops_bars(measurement: Measurement) -> Figure:
    """One bar per direction measured: its IOPS."""
    from matplotlib.figure import Figure  # noqa: PLC0415  # only where the figure is drawn

    fig = Figure(figsize=(4.0, 3.0), layout="constrained")
    ax = fig.add_subplot()
    directions = sorted(measurement.metrics)
    ax.bar(directions, [measurement.metrics[d]["iops"] for d in directions])
    ax.set_ylabel("IOPS")
    ax.set_title(f"{measurement.name}: IOPS", fontsize="medium")
    return fig


def acceptance(ctx: Context) -> Section | None:
    """One row per drive and check: what was measured, against what, and the verdict."""
    found = ctx.derived(KIND)
    if not found:
        return None
    rows = [
        [
            html.escape(drive.drive.label),
            html.escape(values["check"]),
            f"{values['measured']:,.0f} {html.escape(values['unit'])}",
            html.escape(values["verdict"]),
        ]
        for drive, record in found
        for values in [record.values]
    ]
    body = table(["drive", "check", "measured", "datasheet verdict"], rows)
    left_out = [
        f"{d.drive.label}: no acceptance results"
        for d in ctx.drives
        if not any(drive is d for drive, _ in found)
    ]
    return Section(
        "ssd-suite-vendor", "Vendor acceptance (examples/vendor_suite)", body + notes(left_out)
    )
