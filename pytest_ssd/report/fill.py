"""Fill drive and speed profile graphs (METHOD §4.2, §8), as matplotlib ``Figure`` objects.

Bandwidth in MiB/s, data in GiB, latency in ms.  fio's bandwidth windows are
drawn as steps over the time (or data) they cover, so fio's long first window
shows as what it is.  Each function returns a ``Figure`` (no pyplot state);
attach it with ``ssd.figure(fig, title)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pytest_ssd.analysis.fill import CacheEstimate, FillPass
from pytest_ssd.analysis.speed import SpeedProfile
from pytest_ssd.report.figures import PALETTE

MiB, GiB = 1 << 20, 1 << 30
_SIZE = (6.4, 3.6)
#: the colour of idle gaps, as in seed 001's latency graph
GAP_COLOUR = "grey"


def _finish(fig: Figure, ax: Axes, title: str, legend: bool = True) -> None:
    ax.set_title(title, fontsize="small")
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    if legend:
        ax.legend(fontsize="x-small")
    fig.tight_layout()


def bw_vs_written(passes: Sequence[FillPass], caches: Sequence[CacheEstimate]) -> Figure:
    """MiB/s per log window against GiB written: the cache's shape; the cache estimate marked."""
    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    for index, (fill, cache) in enumerate(zip(passes, caches, strict=True)):
        colour = PALETTE[index % len(PALETTE)]
        _, start = fill.window_start()
        edges = np.append(start, fill.written[-1]) / GiB
        ax.stairs(fill.bw / MiB, edges, baseline=None, color=colour, linewidth=1, label=fill.name)
        if cache.cache_bytes is not None:
            ax.axvline(
                cache.cache_bytes / GiB, color=colour, linestyle="--", linewidth=1,
                label=f"{fill.name}: cache ≈ {cache.cache_bytes / GiB:.3g} GiB",
            )  # fmt: skip
    ax.set_xlim(left=0)
    ax.set_xlabel("written (GiB)")
    ax.set_ylabel("bandwidth (MiB/s)")
    _finish(fig, ax, "Fill drive: bandwidth against data written")
    return fig


def bw_vs_time(passes: Sequence[FillPass]) -> Figure:
    """MiB/s against time, one panel per pass, with the pass's mean as a horizontal line."""
    fig = Figure(figsize=(_SIZE[0], 2.4 * len(passes)))
    for index, fill in enumerate(passes):
        ax = fig.add_subplot(len(passes), 1, index + 1)
        start, _ = fill.window_start()
        edges = np.append(start, fill.t_s[-1])
        ax.stairs(
            fill.bw / MiB, edges, baseline=None, color=PALETTE[0], linewidth=1, label="bandwidth"
        )
        mean = fill.mean_bw / MiB
        ax.axhline(mean, color=PALETTE[1], label=f"mean {mean:,.0f} MiB/s")
        ax.set_xlim(0, max(fill.runtime_s, float(fill.t_s[-1])))
        ax.set_xlabel("time (s)")
        ax.set_ylabel("MiB/s")
        _finish(fig, ax, f"{fill.name}: {fill.runtime_s:,.1f} s, mean {mean:,.0f} MiB/s")
    return fig


def latency_vs_time(passes: Sequence[FillPass], gap_s: float) -> Figure:
    """Mean latency per log window, the passes end to end; a grey vertical line at each idle gap.

    The gap is not drawn to scale (it may be far longer than a pass): the line
    marks where the rest was and its label says how long it lasted.
    """
    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    offset = 0.0
    for index, fill in enumerate(passes):
        if index:
            label = f"idle {gap_s:,.3g} s" if index == 1 else None
            ax.axvline(offset, color=GAP_COLOUR, linewidth=2, label=label)
        colour = PALETTE[index % len(PALETTE)]
        ax.plot(offset + fill.lat_t_s, fill.lat_ns / 1e6, color=colour, linewidth=1,
                label=fill.name)  # fmt: skip
        offset += max(fill.runtime_s, float(fill.lat_t_s[-1]) if len(fill.lat_t_s) else 0.0)
    windows = np.concatenate([fill.lat_ns for fill in passes]) / 1e6
    ax.set_xlim(0, offset)
    ax.set_xlabel("time in the passes (s)")
    ax.set_ylabel("latency (ms)")
    interval = passes[0].log_interval_s * 1000
    _finish(
        fig, ax, f"Fill drive: latency ({interval:g} ms means), highest {windows.max():,.3g} ms"
    )
    return fig


def mean_bars(passes: Sequence[FillPass]) -> Figure:
    """One bar per pass: its mean MiB/s (fio's bytes over fio's runtime)."""
    fig = Figure(figsize=(4.0, 3.0))
    ax = fig.add_subplot()
    names = [fill.name for fill in passes]
    means = [fill.mean_bw / MiB for fill in passes]
    bars = ax.bar(names, means, color=[PALETTE[i % len(PALETTE)] for i in range(len(passes))])
    ax.bar_label(bars, fmt="%.0f", fontsize="x-small")
    ax.set_ylabel("mean bandwidth (MiB/s)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Fill drive: mean bandwidth per pass", fontsize="small")
    fig.tight_layout()
    return fig


def speed_per_quantum(series: Sequence[tuple[str, SpeedProfile]], n: int) -> Figure:
    """Speed per quantum against data done, with the moving average over *n* quanta."""
    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    quantum = series[0][1].quantum if series else MiB
    for index, (name, profile) in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        done, speeds, shared = profile.q / GiB, profile.v / MiB, profile.interpolated
        ax.scatter(done[~shared], speeds[~shared], s=6, color=colour, alpha=0.7,
                   label=f"{name}: per quantum")  # fmt: skip
        if shared.any():
            ax.scatter(done[shared], speeds[shared], s=10, facecolors="white", edgecolors=colour,
                       label=f"{name}: inside one log window ({shared.sum()})")  # fmt: skip
        ends, moving = profile.moving(n)
        if len(ends):
            ax.plot(profile.q[n - 1 :] / GiB, moving / MiB, color=colour, linewidth=1.5,
                    label=f"{name}: moving average of {n}")  # fmt: skip
    ax.set_xlim(left=0)
    ax.set_xlabel("data done (GiB)")
    ax.set_ylabel("speed (MiB/s)")
    _finish(fig, ax, f"Speed profile: {quantum / MiB:g} MiB quanta")
    return fig


def speed_histogram(series: Sequence[tuple[str, SpeedProfile]], p: float) -> Figure:
    """Histogram of the sample speeds; the rate sustained by all but *p* % of them marked."""
    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    speeds = [profile.v / MiB for _, profile in series]
    every = np.concatenate(speeds) if speeds else np.zeros(0)
    edges = np.histogram_bin_edges(every, bins="auto") if len(every) else np.arange(2.0)
    for index, (name, profile) in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        ax.hist(profile.v / MiB, bins=edges.tolist(), histtype="step", color=colour, label=name)
        held = profile.sustained(p)
        note = "" if held.resolved else f", not resolved by {held.samples} samples"
        label = f"{name}: {100 - p:g} % at ≥ {held.bw / MiB:,.0f} MiB/s{note}"
        ax.axvline(held.bw / MiB, color=colour, linestyle="--", label=label)
    ax.set_xlabel("speed per quantum (MiB/s)")
    ax.set_ylabel("quanta")
    _finish(fig, ax, "Speed profile: distribution of the sample speeds")
    return fig
