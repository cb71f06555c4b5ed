"""One series across builds: throughput and tail latency per build, each build's repeats as
a spread, a colour per drive, the changes judged between consecutive builds marked."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pytest_ssd.figures import latency_axis, legend_below
from pytest_ssd.results.history import Change, HistoryRow, drive_of

#: builds named under the graph at most (every n-th build beyond)
MAX_TICKS = 16
#: the width a title wraps at (characters)
TITLE_WIDTH = 110
#: how far apart the drives of one build are drawn (a share of one build's slot)
DRIVE_OFFSET = 0.6


def history_figure(
    rows: Sequence[HistoryRow], title: str, changes: Sequence[Change] = (), p: float = 99.0
) -> Figure:
    """IOPS (top) and the pooled p-th percentile (bottom) per build (``--ssd-build``, else
    the firmware; 'unknown build' where neither), builds in the order they were first
    measured (oldest left).

    A colour per drive; per build and drive a dot at the mean of its runs and a bar over
    its repeats' range (each repeat's IOPS, fio's own p99 of each repeat); a regressed (red)
    or improved (green) change (*changes*) ringed with its ratio, its build shaded.
    """
    fig = Figure(figsize=(10.0, 6.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    builds = list(dict.fromkeys(r.shown_build for r in rows))
    drives = list(dict.fromkeys(drive_of(r) for r in rows))
    named: set[str] = set()  # a drive named in the legend once
    #: (build, drive, "iops" or "p99") -> where its dot is
    dots: dict[tuple[str, str, str], tuple[float, float]] = {}
    for index, drive in enumerate(drives):
        shift = (index - (len(drives) - 1) / 2) * DRIVE_OFFSET / max(len(drives), 1)
        style: dict[str, Any] = {"color": f"C{index % 10}", "marker": "o", "ls": ""}
        for number, build in enumerate(builds):
            mine = [r for r in rows if r.shown_build == build and drive_of(r) == drive]
            if not mine:
                continue
            x = number + shift
            iops = [v for r in mine for v in (r.iops_each or ([r.iops] if r.iops else []))]
            label = "" if drive in named else drive
            if iops:
                dots[build, drive, "iops"] = (x, _spread(top, x, iops, {**style, "label": label}))
            named.add(drive)
            pooled = [v for r in mine if (v := r.percentiles.get(p)) is not None]
            each = [v for r in mine for v in r.p99_each if v is not None] if p == 99.0 else []
            if pooled:
                dots[build, drive, "p99"] = (x, _spread(bottom, x, pooled, style, low_high=each))
    shaded: set[tuple[str, str]] = set()
    for change in changes:
        dot = dots.get((change.build, change.drive, change.metric))
        if change.verdict not in ("regressed", "improved") or dot is None:
            continue
        ax = top if change.metric == "iops" else bottom
        colour = "#d62728" if change.verdict == "regressed" else "#2ca02c"
        if (change.build, change.metric) not in shaded:  # once per build, whatever the drives
            shaded.add((change.build, change.metric))
            x = builds.index(change.build)
            ax.axvspan(x - 0.45, x + 0.45, color=colour, alpha=0.08, linewidth=0)
        ax.plot(*dot, "o", ms=13, mfc="none", mec=colour, mew=1.5)
        ax.annotate(
            f"{change.ratio:.2f}×",
            dot,
            xytext=(8, 6),
            textcoords="offset points",
            fontsize="small",
            color=colour,
        )
    top.set_ylabel("IOPS")
    latency_axis(bottom.yaxis, f"p{p:g} latency")
    top.set_title("\n".join(textwrap.wrap(title, TITLE_WIDTH)), fontsize="medium", loc="left")
    every = -(-len(builds) // MAX_TICKS) or 1
    ticks = list(range(0, len(builds), every))
    bottom.set_xticks(ticks)
    bottom.set_xticklabels(
        [builds[i][:24] for i in ticks], rotation=30, ha="right", fontsize="small"
    )
    bottom.set_xlabel("build (oldest left; a dot: the mean of its runs, a bar: its repeats)")
    for ax in (top, bottom):
        ax.margins(y=0.15)  # room for a change's ratio above its dot
        ax.grid(True, alpha=0.3)
        ax.set_xlim(-0.6, len(builds) - 0.4)
    legend_below(fig, top, columns=4)
    return fig


def _spread(
    ax: Axes,
    x: float,
    values: Sequence[float],
    style: dict[str, Any],
    *,
    low_high: Sequence[float] = (),
) -> float:
    """A dot at the mean of *values* (returned), a bar over their range (and *low_high*'s,
    where given); *style* as ``plot`` takes it (an empty label: not in the legend)."""
    mean = sum(values) / len(values)
    ends = [*values, *low_high]
    ax.vlines(x, min(ends), max(ends), colors=style["color"], linewidth=1.5, alpha=0.6)
    ax.plot([x], [mean], **style)
    return mean
