"""The SNIA PTS section (``suites/snia``): per test the steady-state pages and the results.

For each PTS test (IOPS, throughput per block size, latency) and each drive
that ran it: the steady-state table (rounds, measurement window, range and
fitted-line excursions against their limits, the verdict), the convergence
plot, the measurement-window plot (window mean ± 10 % band and the fitted
line), every block size of the tracked R/W mix per round, and the window's
per-cell results as tables (R/W mix x block size) and 2-D plots.  Everything is
redrawn from the results database: the derived record ``snia-<test>`` and the
series of the same name.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import numpy as np

from pytest_ssd.db import DriveResults
from pytest_ssd.figures.steady import snia_convergence, snia_window
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.methods.snia import figures as figs
from pytest_ssd.methods.snia.workloads import mix_label
from pytest_ssd.report.sections.base import (
    Context,
    KeyFigure,
    ReportSection,
    Section,
    derived_records,
    notes,
    table,
)
from pytest_ssd.report.sections.keyresults import number, records, steady_text
from pytest_ssd.results.record import Derived
from pytest_ssd.steady.snia import SniaRule, SniaVerdict, SteadyStateError, evaluate
from pytest_ssd.text import latency, rate

ID = "ssd-suite-snia"
TITLE = "SNIA PTS tests (suites/snia)"
SNIA = "snia/"
#: the PTS's order of tests
ORDER = ("snia-iops", "snia-throughput-1MiB", "snia-throughput-128KiB", "snia-latency")


def _order(name: str) -> tuple[int, str]:
    return (ORDER.index(name) if name in ORDER else len(ORDER)), name


def verdict_of(values: Mapping[str, Any]) -> SniaVerdict:
    """The rule applied again to the recorded rounds (the record keeps values and rule)."""
    return evaluate(values["values"], SniaRule(**values["rule"]))


def steady_row(name: str, v: SniaVerdict, unit: str) -> list[str]:
    outcome = (
        f"reached at round {v.reached_round}"
        if v.attained
        else f"<b>not reached</b> after {v.rounds} rounds"
    )
    return [
        html.escape(name),
        outcome,
        f"{v.window_first}–{v.window_last}",
        ", ".join(_tracked(x, unit) for x in v.window_values),
        _tracked(v.mean, unit),
        f"{v.range_excursion_pct:.1f} % (≤ {v.range_limit_pct:g} %)",
        rate(v.slope, unit, v.mean, "round"),
        f"{v.slope_excursion_pct:.1f} % (≤ {v.slope_limit_pct:g} %)",
    ]


def _tracked(value: float, unit: str) -> str:
    """A tracked value: a latency in its unit (2.34 s), else as fio gave it (9,222.5)."""
    return latency(value) if unit == "µs" else f"{value:,.6g}"


STEADY_HEADER = [
    "drive",
    "steady state",
    "window rounds",
    "window values",
    "mean",
    "range excursion (limit)",
    "fitted slope",
    "slope excursion (limit)",
]


def _format(value: float, unit: str) -> str:
    if np.isnan(value):
        return "n/r"
    if unit == "µs":
        return latency(value)
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def cell_table(result: figs.CellTable) -> str:
    """Mixes as rows, block sizes as columns; 'n/r': not resolved by the window's I/Os.

    A latency is in its unit in each cell (716.8 µs, 2.21 ms), as the results table writes it.
    """
    what = html.escape(result.what)
    unit = "" if result.unit == "µs" else f" ({result.unit})"
    header = [f"R/W mix \\ {what}{unit}"] + [format_bytes(bs) for bs in result.block_sizes]
    rows = [
        [mix_label(mix), *(_format(v, result.unit) for v in result.values[i])]
        for i, mix in enumerate(result.mixes)
    ]
    return table(header, rows)


def _drive_part(ctx: Context, drive: DriveResults, record: Derived) -> str:
    values, name, label = record.values, record.name, drive.drive.label
    verdict = verdict_of(values)
    quantity, unit = values["quantity"], values["unit"]

    def caption(page: str) -> str:
        return f"{name} {page}: {label}"

    body = [
        ctx.figures.html(
            snia_convergence(verdict, quantity=quantity, unit=unit), caption("convergence")
        ),
        ctx.figures.html(snia_window(verdict, quantity=quantity, unit=unit), caption("window")),
    ]
    series = next((s for s in drive.series if s.test == record.test and s.name == name), None)
    if series is not None:
        rounds = np.asarray(series.arrays[values["metric"]], dtype=float)
        body.append(
            ctx.figures.html(figs.tracked_mix_rounds(values, rounds, verdict), caption("rounds"))
        )
    window = f"rounds {verdict.window_first}–{verdict.window_last}"
    for metric in figs.CELL_METRICS[values["metric"]]:
        cells = figs.CellTable.of(values, values["window"], metric)
        title = f"{label}: SNIA {values['title']}, {cells.what}, window {window}"
        if cells.resolved:
            body.append(ctx.figures.html(figs.by_block_size(cells, title), caption(metric)))
        body.append(cell_table(cells))
    return f"<h4>{html.escape(label)}</h4>" + "".join(body)


def section(ctx: Context) -> Section | None:
    """Every SNIA PTS test any drive ran; None when none did."""
    found = {}
    for name, runs in derived_records(ctx.drives, "snia-", SNIA).items():
        kept = [(drive, record) for drive, record in runs if "window" in record.values]
        if kept:
            found[name] = kept
    if not found:
        return None
    parts, left_out = [], []
    for name in sorted(found, key=_order):
        rows, bodies = [], []
        for drive, record in found[name]:
            try:
                verdict = verdict_of(record.values)
                rows.append(steady_row(drive.drive.label, verdict, record.values["unit"]))
            except SteadyStateError as exc:
                left_out.append(f"{drive.drive.label}: {name}: {exc}")
                continue
            bodies.append(_drive_part(ctx, drive, record))
        first = found[name][0][1].values
        heading = f"{first['title']} (tracked: {first['quantity']}, {first['cell_s']:g} s cells)"
        parts.append(
            f"<h3>{html.escape(heading)}</h3>" + table(STEADY_HEADER, rows) + "".join(bodies)
        )
    return Section(ID, TITLE, notes(left_out) + "".join(parts))


def headline(ctx: Context, drive: DriveResults) -> list[KeyFigure]:
    """The SNIA PTS tests: each test's tracked variable, its mean over the window."""
    found = []
    for record in records(ctx, drive, "snia-*"):
        v = record.values
        what = f"{v.get('title', record.name)}: {v.get('quantity', '')}".strip(": ")
        unit = str(v.get("unit", ""))
        found.append(KeyFigure(what, number(v.get("mean"), unit), steady_text(v.get("attained"))))
    return found


#: the method's section of the report, declared by its hook (:mod:`pytest_ssd.methods.snia`)
SECTION = ReportSection(
    suite="snia", title=TITLE, build=section, order=40, kinds=("snia-*",), headline=headline
)
