"""A suite's measurements side by side: grouped bars per workload, one bar per drive.

The smoke suite's four corners use it, and so does any suite without a section
of its own: SEQ in MiB/s, RND in k-IOPS, and a table with p99 latency.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from pytest_ssd.db import shared_test_id
from pytest_ssd.figures import legend_below, value_labels
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.report.sections.base import Context, Palette, Section, notes, table
from pytest_ssd.report.sections.match import Matched, match, measurement_keys
from pytest_ssd.results.record import Measurement, percentile_us
from pytest_ssd.text import latency

#: more workloads than this make bars nobody can read: the table (and the CSV export) carry them
MAX_BARS = 32
#: the table's figures: (metric key, decimals)
TABLE_FIGURES = (("iops", 0), ("bw_mib_s", 1), ("bw_mb_s", 1), ("lat_mean_us", 1), ("p99_us", 1))
#: (pattern, unit, metric key, scale) of each panel
PANELS = (("seq", "MiB/s", "bw_mib_s", 1.0), ("rnd", "k-IOPS", "iops", 1e-3))


def workload_label(m: Measurement, direction: str) -> str:
    w = m.workload
    share = f" {w['read_pct']}%R" if len(m.metrics) > 1 else ""
    bs = format_bytes(int(w["block_size"]))
    return f"{w['pattern'].upper()} {bs} Q{w['iodepth']}T{w['numjobs']}{share} {direction}"


#: workload label -> drive label -> (value, sd over repeated runs or 0)
Bars = dict[str, dict[str, tuple[float, float]]]


def repeated(one: Matched) -> dict[str, Any] | None:
    """The spread over ``--ssd-repeat`` runs of the matched measurement, if it was repeated."""
    m = one.measurement
    return one.drive.derived_values(shared_test_id(m.test, m.device), f"{m.name}.repeat")


def value_of(one: Matched, direction: str, key: str) -> tuple[float, float]:
    """(mean over runs, sd) when repeated, else (the one run's value, 0); NaN: not resolved.

    A percentile over repeated runs is the runs' histograms pooled (when they were kept),
    with the sd of the runs' own percentiles: percentiles never average.
    """
    spread = (repeated(one) or {}).get(direction, {}).get(key)
    if spread is not None and "pooled" in spread:
        pooled = spread["pooled"]
        return (np.nan if pooled is None else float(pooled)), float(spread.get("sd", 0.0))
    if spread is not None:
        return float(spread["mean"]), float(spread["sd"])
    data = one.measurement.metrics[direction]
    is_percentile = key.startswith("p") and key.endswith("_us")
    value = percentile_us(data, float(key[1:-3])) if is_percentile else data.get(key)
    return (np.nan if value is None else float(value)), 0.0


def _bars(groups: list[list[Matched]], pattern: str, key: str, scale: float) -> Bars:
    bars: Bars = {}
    for group in groups:
        for one in group:
            m = one.measurement
            if m.workload.get("pattern") != pattern:
                continue
            for direction in sorted(m.metrics):
                mean, sd = value_of(one, direction, key)
                label = workload_label(m, direction)
                bars.setdefault(label, {})[one.label] = (mean * scale, sd * scale)
    return bars


#: panels side by side in a comparison figure
PANELS_PER_ROW = 3


def grouped_bars(panels: list[tuple[str, Bars]], palette: Palette) -> Figure:
    """One panel per unit: groups of bars (one per drive) for each workload.

    At most :data:`PANELS_PER_ROW` panels side by side: the figure stays within a
    1,400 px window at 100 % zoom (four panels in a row were 1,729 px).
    """
    columns = min(len(panels), PANELS_PER_ROW) or 1
    rows = -(-len(panels) // columns)
    fig = Figure(figsize=(4.2 * columns + 0.6, 4.0 * rows), layout="constrained")
    for position, (unit, bars) in enumerate(panels, start=1):
        ax = fig.add_subplot(rows, columns, position)
        labels = list(bars)
        drives = [d for d in palette.labels if any(d in v for v in bars.values())]
        width = 0.8 / max(len(drives), 1)
        for index, drive in enumerate(drives):
            xs = np.arange(len(labels)) + index * width
            heights = [bars[label].get(drive, (np.nan, 0.0))[0] for label in labels]
            errors = [bars[label].get(drive, (np.nan, 0.0))[1] for label in labels]
            drawn = ax.bar(
                xs,
                heights,
                width,
                color=palette.colour(drive),
                label=drive,
                yerr=errors if any(errors) else None,
                capsize=3,
            )
            value_labels(ax, drawn)
        ax.set_xticks(np.arange(len(labels)) + width * (len(drives) - 1) / 2)
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize="small")
        ax.set_ylabel(unit)
        ax.set_title(unit)
        ax.grid(True, axis="y", alpha=0.3)
    # below the panels: a drive's label (a test host's loop device names its backing
    # file and host) is often wider than a panel, and a legend inside collapsed it
    legend_below(fig, *fig.axes, columns=1)
    return fig


def _figure(one: Matched, direction: str, key: str, digits: int) -> str:
    """'9,222' or, over repeated runs, '9,222 ± 520'."""
    mean, sd = value_of(one, direction, key)
    if np.isnan(mean):
        return "not resolved" if key.startswith("p") else "—"
    if key.endswith("_us"):
        return latency(mean, sd if repeated(one) else None)
    return f"{mean:,.{digits}f}" + (f" ± {sd:,.{digits}f}" if repeated(one) else "")


def _runs(one: Matched, direction: str) -> str:
    """'1', or '3, CV 5.6 %' and UNSTABLE beyond the threshold the run used."""
    spread = repeated(one)
    if spread is None:
        return "1"
    iops = spread.get(direction, {}).get("iops", {})
    text = f"{spread['runs']}, CV {iops.get('cv', 0.0):.1%}"
    unstable = [u for u in spread["unstable"] if u.startswith(direction)]
    return text + (" <b>unstable</b>" if unstable else "")


def _row(one: Matched) -> list[list[str]]:
    rows = []
    for direction in sorted(one.measurement.metrics):
        figures = [_figure(one, direction, key, digits) for key, digits in TABLE_FIGURES]
        rows.append(
            [
                html.escape(workload_label(one.measurement, direction)),
                html.escape(one.label),
                *figures,
                _runs(one, direction),
            ]
        )
    return rows


def section(ctx: Context, suite: str, title: str, prefix: str) -> Section | None:
    """Bars and a table of every workload measured by tests under *prefix*, all drives alike."""
    keys = measurement_keys(ctx.drives, prefix)
    if not keys:
        return None
    groups, left_out = [], []
    for key in keys:
        found, missing = match(ctx.drives, key)
        groups.append(found)
        left_out.extend(missing)
    panels = [(unit, b) for p, unit, k, s in PANELS if (b := _bars(groups, p, k, s))]
    body = ""
    if len(keys) > MAX_BARS:
        left_out.append(f"{len(keys)} workloads: too many for one bar chart; see the table")
    elif panels:
        body = ctx.figures.html(grouped_bars(panels, ctx.palette), f"{suite} by workload")
    header = ["workload", "drive", "IOPS", "MiB/s", "MB/s", "mean latency", "p99 latency", "runs"]
    body += table(header, [row for group in groups for one in group for row in _row(one)])
    return Section(f"ssd-suite-{suite}", title, body + notes(left_out))
