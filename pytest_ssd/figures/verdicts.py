"""The ratios new / baseline per point and metric, with their confidence intervals.

One row per judged metric: the ratio of medians as a dot, its exact interval as a
bar, on a logarithmic axis around 1 (a tenfold slow-down and a 2 % drift both read),
coloured by the verdict; the tolerance band of each row as a light box behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

#: a verdict's colour (regressed red, improved green, same grey, unknown orange)
COLOURS = {"regressed": "#d62728", "improved": "#2ca02c", "same": "#7f7f7f", "unknown": "#ff7f0e"}


@dataclass(frozen=True)
class Row:
    """One judged metric: its label, ratio, interval, tolerance and verdict."""

    label: str
    ratio: float
    low: float
    high: float
    tolerance: float
    verdict: str


def ratio_intervals(rows: Sequence[Row], title: str) -> Figure:
    """Ratio and interval of every row, top to bottom, on a log axis with a line at 1."""
    fig = Figure(figsize=(7.5, 1.2 + 0.28 * len(rows)))
    ax = fig.add_subplot()
    for y, row in enumerate(reversed(rows)):
        colour = COLOURS.get(row.verdict, "black")
        band = (1 / (1 + row.tolerance), 1 + row.tolerance)
        ax.fill_betweenx([y - 0.35, y + 0.35], *band, color="#dddddd", linewidth=0)
        ax.plot([row.low, row.high], [y, y], color=colour, linewidth=2)
        ax.plot([row.ratio], [y], "o", color=colour, markersize=5)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r.label} ({r.verdict})" for r in reversed(rows)], fontsize="small")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("new / baseline (Hodges-Lehmann ratio, exact 95 % interval; grey: tolerance)")
    ax.set_title(title)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    return fig
