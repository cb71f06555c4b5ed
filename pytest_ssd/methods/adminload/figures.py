"""The figure of one drive: each percentile's runs without and with admin polling."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pytest_ssd.figures import latency_axis

UNPOLLED = "#7f7f7f"
_SIZE = (6.4, 3.4)
_OFFSET = 0.18


@dataclass(frozen=True)
class Group:
    """One percentile of one queue depth and rate, as drawn: its runs and its verdict."""

    label: str
    unpolled_us: tuple[float | None, ...]
    polled_us: tuple[float | None, ...]
    verdict: str


def _side(ax: Axes, x: float, values: Sequence[float | None], colour: str, name: str) -> None:
    known = [v for v in values if v is not None]
    missing = len(values) - len(known)
    if missing:  # runs too short to resolve the percentile: said, never drawn
        text = "n/r" if not known else f"{missing} n/r"
        ax.annotate(text, (x, 0.02), xycoords=("data", "axes fraction"), ha="center")
    if not known:
        return
    ax.scatter([x] * len(known), known, s=14, color=colour, alpha=0.7, label=name)
    middle = statistics.median(known)
    ax.plot([x - 0.08, x + 0.08], [middle, middle], color=colour, linewidth=2)


def polling_cost(groups: Sequence[Group], colour: str, title: str) -> Figure:
    """Each group's runs without polling (grey) and with (the drive's colour), their
    medians as bars, the verdict under the group; 'n/r' for the runs that cannot resolve it."""
    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    for x, group in enumerate(groups):
        _side(ax, x - _OFFSET, group.unpolled_us, UNPOLLED, "without polling")
        _side(ax, x + _OFFSET, group.polled_us, colour, "with polling")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{g.label}\n{g.verdict}" for g in groups], fontsize="small")
    ax.set_yscale("log")
    latency_axis(ax.yaxis, "completion latency")
    ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    if unique:
        ax.legend(unique.values(), unique.keys(), fontsize="small")
    ax.set_xlim(-0.6, max(len(groups), 1) - 0.4)
    return fig
