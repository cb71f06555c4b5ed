"""A suite's measurements side by side: grouped bars per workload, one bar per drive.

The smoke suite's four corners use it, and so does any suite without a section
of its own: SEQ in MiB/s, RND in k-IOPS, and a table with p99 latency.
"""

from __future__ import annotations

import html

import numpy as np
from matplotlib.figure import Figure

from pytest_ssd.fio.job import format_bytes
from pytest_ssd.report.sections.base import Context, Palette, Section, notes, table
from pytest_ssd.report.sections.match import Matched, match, measurement_keys
from pytest_ssd.results.record import Measurement, percentile_us

#: more workloads than this make bars nobody can read: the table (and the CSV export) carry them
MAX_BARS = 32
#: (pattern, unit, metric key, scale) of each panel
PANELS = (("seq", "MiB/s", "bw_mib_s", 1.0), ("rnd", "k-IOPS", "iops", 1e-3))


def workload_label(m: Measurement, direction: str) -> str:
    w = m.workload
    share = f" {w['read_pct']}%R" if len(m.metrics) > 1 else ""
    bs = format_bytes(int(w["block_size"]))
    return f"{w['pattern'].upper()} {bs} Q{w['iodepth']}T{w['numjobs']}{share} {direction}"


Bars = dict[str, dict[str, float]]  # workload label -> drive label -> value


def _bars(groups: list[list[Matched]], pattern: str, key: str, scale: float) -> Bars:
    bars: Bars = {}
    for group in groups:
        for one in group:
            m = one.measurement
            if m.workload.get("pattern") != pattern:
                continue
            for direction, data in sorted(m.metrics.items()):
                bars.setdefault(workload_label(m, direction), {})[one.label] = data[key] * scale
    return bars


def grouped_bars(panels: list[tuple[str, Bars]], palette: Palette) -> Figure:
    """One panel per unit: groups of bars (one per drive) for each workload."""
    fig = Figure(figsize=(4.2 * len(panels) + 0.6, 4.0))
    for position, (unit, bars) in enumerate(panels, start=1):
        ax = fig.add_subplot(1, len(panels), position)
        labels = list(bars)
        drives = [d for d in palette.labels if any(d in v for v in bars.values())]
        width = 0.8 / max(len(drives), 1)
        for index, drive in enumerate(drives):
            xs = np.arange(len(labels)) + index * width
            heights = [bars[label].get(drive, np.nan) for label in labels]
            drawn = ax.bar(xs, heights, width, color=palette.colour(drive), label=drive)
            ax.bar_label(drawn, fmt="%.0f", fontsize="x-small")
        ax.set_xticks(np.arange(len(labels)) + width * (len(drives) - 1) / 2)
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize="small")
        ax.set_ylabel(unit)
        ax.set_title(unit)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def _row(one: Matched) -> list[list[str]]:
    rows = []
    for direction, data in sorted(one.measurement.metrics.items()):
        p99 = percentile_us(data, 99.0)
        rows.append([
            html.escape(workload_label(one.measurement, direction)), html.escape(one.label),
            f"{data['iops']:,.0f}", f"{data['bw_mib_s']:,.1f}", f"{data['bw_mb_s']:,.1f}",
            f"{data['lat_mean_us']:,.1f}" if data.get("lat_mean_us") is not None else "—",
            "not resolved" if p99 is None else f"{p99:,.1f}",
        ])  # fmt: skip
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
    header = ["workload", "drive", "IOPS", "MiB/s", "MB/s", "mean lat (µs)", "p99 (µs)"]
    body += table(header, [row for group in groups for one in group for row in _row(one)])
    return Section(f"ssd-suite-{suite}", title, body + notes(left_out))
