"""One series across runs: throughput and tail latency per run, a colour per firmware build."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from pytest_ssd.figures import latency_axis, legend_below
from pytest_ssd.results.history import HistoryRow

#: markers told apart by drive (serial), in the order drives first appear
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: runs named under the graph at most (every n-th run beyond)
MAX_TICKS = 12


def history_figure(rows: Sequence[HistoryRow], title: str, p: float = 99.0) -> Figure:
    """IOPS (top) and the pooled p-th percentile (bottom) of each run, oldest left.

    A colour per firmware build, a marker per drive; one point per run, drive and
    direction (its repeats pooled).
    """
    fig = Figure(figsize=(9.0, 6.0), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    runs = list(dict.fromkeys(r.run_id for r in rows))
    builds = list(dict.fromkeys(_build(r) for r in rows))
    drives = list(dict.fromkeys(_drive(r) for r in rows))
    cycle = [f"C{n % 10}" for n in range(len(builds))]  # matplotlib's default colours
    named = len(drives) <= len(MARKERS)  # more drives than markers: the legend names builds
    for build, colour in zip(builds, cycle, strict=True):
        for drive_index, drive in enumerate(drives):
            mine = [r for r in rows if _build(r) == build and _drive(r) == drive]
            if not mine:
                continue
            xs = [runs.index(r.run_id) for r in mine]
            style = {"color": colour, "marker": MARKERS[drive_index % len(MARKERS)], "ls": ""}
            label = f"firmware {build}" + (f", {drive}" if named else "")
            top.plot(xs, [_value(r.iops) for r in mine], **style, label=label)
            bottom.plot(xs, [_value(r.percentiles.get(p)) for r in mine], **style)
    top.set_ylabel("IOPS")
    latency_axis(bottom.yaxis, f"p{p:g} latency")
    top.set_title(title, fontsize="medium", loc="left")
    every = -(-len(runs) // MAX_TICKS) or 1
    ticks = list(range(0, len(runs), every))
    starts = {r.run_id: r.run_start[:16].replace("T", " ") for r in rows}
    bottom.set_xticks(ticks)
    bottom.set_xticklabels(
        [starts[runs[i]] for i in ticks], rotation=30, ha="right", fontsize="small"
    )
    bottom.set_xlabel("run (oldest left)")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    legend_below(fig, top, columns=3)
    return fig


def _value(value: float | None) -> float:
    """A figure to plot: NaN (no point) where there is none."""
    return float("nan") if value is None else value


def _build(row: HistoryRow) -> str:
    return row.firmware or "unknown"


def _drive(row: HistoryRow) -> str:
    """A drive by its serial number (loop devices and files have none: their label)."""
    return row.serial or row.label
