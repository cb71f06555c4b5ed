"""Fill drive and speed profile graphs (METHOD §4.2, §8), as matplotlib ``Figure`` objects.

Bandwidth in MiB/s, data in GiB, latency in ms.  fio's bandwidth windows are
drawn as steps over the time (or data) they cover, so fio's long first window
shows as what it is.  Each function returns a ``Figure`` (no pyplot state);
attach it with ``ssd.figure(fig, title)``.

One drive's passes (the test's own graphs) are coloured by pass; several
drives' (the comparison, :class:`DriveFill` keyed by drive label) by drive, one
panel per pass.  A pass travels to the results database as a series
(:func:`series_of`, :func:`pass_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pytest_ssd.analysis.fill import CacheEstimate, FillPass
from pytest_ssd.analysis.speed import SpeedProfile
from pytest_ssd.errors import ParseError
from pytest_ssd.figures import PALETTE, Health, latency_axis, temperature_axis, value_text
from pytest_ssd.text import latency, significant

MiB, GiB = 1 << 20, 1 << 30
_SIZE = (6.4, 3.6)
#: the colour of idle gaps, as in seed 001's latency graph
GAP_COLOUR = "grey"
#: ``meta["kind"]`` of a pass stored with ``ssd.series``
SERIES_KIND = "fill-pass"
#: the arrays of a stored pass and their units
SERIES_UNITS = {"t_s": "s", "bw": "B/s", "written": "B", "lat_t_s": "s", "lat_ns": "ns"}


def series_of(one: FillPass, direction: str) -> tuple[dict[str, Any], dict[str, npt.ArrayLike]]:
    """(meta, arrays) of *one* for ``ssd.series(name, meta, **arrays)``: its logs and fio's totals.

    ``t_s`` window ends (s), ``bw`` bytes/s, ``written`` bytes so far, ``lat_t_s`` and
    ``lat_ns`` the latency log's windows; ``io_bytes`` and ``runtime_s`` are fio's.
    """
    meta = {
        "kind": SERIES_KIND,
        "pass": one.name,
        "direction": direction,
        "io_bytes": one.io_bytes,
        "runtime_s": one.runtime_s,
        "units": SERIES_UNITS,
    }
    arrays: dict[str, npt.ArrayLike] = {key: getattr(one, key) for key in SERIES_UNITS}
    return meta, arrays


def pass_of(meta: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[Any]]) -> FillPass:
    """The pass :func:`series_of` stored; :class:`ParseError` when the series is not one."""
    missing = [key for key in SERIES_UNITS if key not in arrays]
    if meta.get("kind") != SERIES_KIND or missing or "io_bytes" not in meta:
        raise ParseError(
            f"series {meta.get('pass', '?')!r} is not a fill pass (kind {meta.get('kind')!r}, "
            f"missing {missing or 'io_bytes'})"
        )
    floats = {key: np.asarray(arrays[key], dtype=np.float64) for key in SERIES_UNITS}
    return FillPass(
        str(meta["pass"]),
        floats["t_s"],
        floats["bw"],
        floats["written"],
        floats["lat_t_s"],
        floats["lat_ns"],
        int(meta["io_bytes"]),
        float(meta["runtime_s"]),
    )


@dataclass(frozen=True)
class DriveFill:
    """One drive's passes for the comparison: the logs, each pass's cache estimate, the gap."""

    passes: tuple[FillPass, ...]
    #: per pass, None where the cache rule's answer is not known
    caches: tuple[CacheEstimate | None, ...] = ()
    gap_s: float | None = None

    def cache(self, index: int) -> CacheEstimate | None:
        return self.caches[index] if index < len(self.caches) else None


#: a pass of 2 x this many log windows or more gets a moving average over 1/this of them
#: (200 windows of 10 ms already read as a barcode at the report's 650 px)
SMOOTH_WINDOWS = 40


def _finish(fig: Figure, ax: Axes, title: str, legend: bool = True) -> None:
    ax.set_title(title, fontsize="small")
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    if legend:  # below the axes: never over the curves
        ax.legend(
            fontsize="x-small",
            loc="upper left",
            bbox_to_anchor=(0, -0.2),
            ncols=2,
            title=_smoothing(ax),
            title_fontsize="x-small",
            alignment="left",
        )


#: the gid of a moving average's line: ``moving-<windows>``
_MOVING = "moving-"


def _smoothing(ax: Axes) -> str | None:
    """What the legend says of the moving averages on *ax* (None: nothing smoothed)."""
    widths = sorted(
        {
            int(g[len(_MOVING) :])
            for ln in ax.get_lines()
            if (g := ln.get_gid() or "").startswith(_MOVING)
        }
    )
    if not widths:
        return None
    counts = " or ".join(f"{w}" for w in widths)
    return f"lines: moving average of {counts} log windows; faint: each window"


def bw_vs_written(passes: Sequence[FillPass], caches: Sequence[CacheEstimate]) -> Figure:
    """MiB/s per log window against GiB written: the cache's shape; the cache estimate marked."""
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    for index, (fill, cache) in enumerate(zip(passes, caches, strict=True)):
        _bw_against_data(ax, fill, cache, PALETTE[index % len(PALETTE)], fill.name)
    _data_axis(ax, "written")
    _finish(fig, ax, "Fill drive: bandwidth against data written")
    return fig


def _bw_against_data(
    ax: Axes, fill: FillPass, cache: CacheEstimate | None, colour: str, label: str
) -> None:
    """One pass's MiB/s per log window over the GiB it covers; its cache estimate dashed."""
    _, start = fill.window_start()
    _windows(ax, fill.bw / MiB, np.append(start, fill.written[-1]) / GiB, colour, label)
    if cache is not None and cache.cache_bytes is not None:
        ax.axvline(
            cache.cache_bytes / GiB,
            color=colour,
            linestyle="--",
            linewidth=1,
            label=f"{label}: cache ≈ {significant(cache.cache_bytes / GiB)} GiB",
        )


def _windows(
    ax: Axes,
    values: npt.NDArray[np.float64],
    edges: npt.NDArray[np.float64],
    colour: str,
    label: str,
) -> None:
    """Values per log window as steps over *edges*; past ``2 x SMOOTH_WINDOWS`` windows the
    steps faint and their moving average on top (thousands of 10 ms windows read as a barcode)."""
    width = len(values) // SMOOTH_WINDOWS
    if width < 2:  # few windows: each one readable as it is
        ax.stairs(values, edges, baseline=None, color=colour, linewidth=1, label=label)
        return
    ax.stairs(values, edges, baseline=None, color=colour, linewidth=0.5, alpha=0.3)
    centres = (edges[:-1] + edges[1:]) / 2
    mean = np.convolve(values, np.ones(width) / width, mode="valid")
    ax.plot(
        centres[width // 2 : width // 2 + len(mean)],
        mean,
        color=colour,
        linewidth=1.5,
        label=label,
        gid=f"{_MOVING}{width}",
    )


def _data_axis(ax: Axes, done: str) -> None:
    ax.set_xlim(left=0)
    ax.set_xlabel(f"{done} (GiB)")
    ax.set_ylabel("bandwidth (MiB/s)")


def bw_vs_data_drives(
    drives: Mapping[str, DriveFill],
    colours: Mapping[str, str],
    *,
    done: str = "written",
    title: str = "Fill drive",
) -> Figure:
    """Several drives (by label) against GiB *done*: one panel per pass, cache estimates dashed."""
    count = max((len(d.passes) for d in drives.values()), default=0)
    fig = Figure(figsize=(_SIZE[0], 0.4 + 2.8 * max(count, 1)), layout="constrained")
    for index in range(count):
        ax = fig.add_subplot(count, 1, index + 1)
        names = []
        for label, drive in drives.items():
            if index < len(drive.passes):
                _bw_against_data(ax, drive.passes[index], drive.cache(index), colours[label], label)
                names.append(drive.passes[index].name)
        _data_axis(ax, done)
        _finish(fig, ax, f"{title}, {' / '.join(dict.fromkeys(names))}: MiB/s against GiB {done}")
    return fig


Temperatures = Sequence[Health]


def bw_vs_time(passes: Sequence[FillPass], temperatures: Temperatures = ()) -> Figure:
    """MiB/s against time, one panel per pass, with the pass's mean as a horizontal line.

    *temperatures*: per pass, the health sampler's arrays (``t_s``, ``temp_c``), drawn dashed
    on a right-hand axis; None (or absent) where the device has no sensor.
    """
    fig = Figure(figsize=(_SIZE[0], 0.4 + 2.8 * len(passes)), layout="constrained")
    for index, fill in enumerate(passes):
        ax = fig.add_subplot(len(passes), 1, index + 1)
        start, _ = fill.window_start()
        _windows(ax, fill.bw / MiB, np.append(start, fill.t_s[-1]), PALETTE[0], "bandwidth")
        mean = _mib(fill.mean_bw)
        if mean is not None:
            ax.axhline(mean, color=PALETTE[1], label=f"mean {mean:,.0f} MiB/s")
        ax.set_xlim(0, max(fill.runtime_s, float(fill.t_s[-1])))
        ax.set_xlabel("time (s)")
        ax.set_ylabel("MiB/s")
        shown = "not measured" if mean is None else f"{mean:,.0f} MiB/s"
        _finish(fig, ax, f"{fill.name}: {fill.runtime_s:,.1f} s, mean {shown}")
        temperature_axis(ax, temperatures[index] if index < len(temperatures) else None)
    return fig


def latency_vs_time(passes: Sequence[FillPass], gap_s: float) -> Figure:
    """Mean latency per log window, the passes end to end; a grey vertical line at each idle gap.

    The gap is not drawn to scale (it may be far longer than a pass): the line
    marks where the rest was and its label says how long it lasted.
    """
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    colours = [PALETTE[index % len(PALETTE)] for index in range(len(passes))]
    offset = _latency_end_to_end(ax, passes, gap_s, colours, [f.name for f in passes])
    windows = np.concatenate([fill.lat_ns for fill in passes]) / 1e6
    ax.set_xlim(0, offset)
    _latency_axis(ax)
    interval = significant(passes[0].log_interval_s)
    highest = latency(float(windows.max()) * 1000)
    _finish(fig, ax, f"Fill drive: latency ({interval} s means), highest {highest}")
    return fig


def _latency_end_to_end(
    ax: Axes,
    passes: Sequence[FillPass],
    gap_s: float | None,
    colours: Sequence[str],
    labels: Sequence[str | None],
    *,
    gap_colour: str = GAP_COLOUR,
    gap_style: str = "-",
    gap_label: str = "",
) -> float:
    """Draw *passes* end to end, a vertical line where each gap was; the time they took."""
    offset = 0.0
    for index, fill in enumerate(passes):
        if index:
            rest = f"idle {significant(gap_s)} s" if gap_s is not None else "idle"
            ax.axvline(
                offset,
                color=gap_colour,
                linewidth=2,
                linestyle=gap_style,
                label=f"{gap_label}{rest}" if index == 1 else None,
            )
        ax.plot(
            offset + fill.lat_t_s,
            fill.lat_ns / 1e6,
            color=colours[index],
            linewidth=1,
            label=labels[index],
        )
        offset += max(fill.runtime_s, float(fill.lat_t_s[-1]) if len(fill.lat_t_s) else 0.0)
    return offset


def _latency_axis(ax: Axes) -> None:
    ax.set_xlabel("time in the passes (s)")
    latency_axis(ax.yaxis, "latency", us_per_unit=1000)


def latency_vs_time_drives(drives: Mapping[str, DriveFill], colours: Mapping[str, str]) -> Figure:
    """Several drives' (by label) latency per log window, each drive's passes end to end.

    Each drive's idle gap is a dotted line in its colour (not to scale, as for one drive).
    """
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    longest = 0.0
    for label, drive in drives.items():
        colour, passes = colours[label], drive.passes
        names: list[str | None] = [label, *(None for _ in passes[1:])]
        longest = max(
            longest,
            _latency_end_to_end(
                ax,
                passes,
                drive.gap_s,
                [colour] * len(passes),
                names,
                gap_colour=colour,
                gap_style=":",
                gap_label=f"{label}: ",
            ),
        )
    ax.set_xlim(0, longest or 1.0)
    _latency_axis(ax)
    _finish(fig, ax, "Fill drive: latency per log window, the passes end to end")
    return fig


def _mib(value: float | None) -> float | None:
    return None if value is None else value / MiB


def mean_bars(passes: Sequence[FillPass]) -> Figure:
    """One bar per pass: its mean MiB/s (fio's bytes over fio's runtime)."""
    fig = Figure(figsize=(4.0, 3.0), layout="constrained")
    ax = fig.add_subplot()
    names = [fill.name for fill in passes]
    means = [_mib(fill.mean_bw) for fill in passes]
    heights = [0.0 if m is None else m for m in means]
    bars = ax.bar(names, heights, color=[PALETTE[i % len(PALETTE)] for i in range(len(passes))])
    labels = ["not measured" if m is None else value_text(m) for m in means]
    ax.bar_label(bars, labels=labels, fontsize="small")
    ax.margins(y=0.12)  # the tallest bar's value inside the axes
    ax.set_ylabel("mean bandwidth (MiB/s)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Fill drive: mean bandwidth per pass", fontsize="small")
    return fig


def speed_per_quantum(series: Sequence[tuple[str, SpeedProfile]], n: int) -> Figure:
    """Speed per quantum against data done, with the moving average over *n* quanta."""
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    quantum = series[0][1].quantum if series else MiB
    for index, (name, profile) in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        done, speeds, shared = profile.q / GiB, profile.v / MiB, profile.interpolated
        ax.scatter(
            done[~shared],
            speeds[~shared],
            s=6,
            color=colour,
            alpha=0.7,
            label=f"{name}: per quantum",
        )
        if shared.any():
            ax.scatter(
                done[shared],
                speeds[shared],
                s=10,
                facecolors="white",
                edgecolors=colour,
                label=f"{name}: inside one log window ({shared.sum()})",
            )
        ends, moving = profile.moving(n)
        if len(ends):
            ax.plot(
                profile.q[n - 1 :] / GiB,
                moving / MiB,
                color=colour,
                linewidth=1.5,
                label=f"{name}: moving average of {n}",
            )
    ax.set_xlim(left=0)
    ax.set_xlabel("data done (GiB)")
    ax.set_ylabel("speed (MiB/s)")
    _finish(fig, ax, f"Speed profile: {quantum / MiB:g} MiB quanta")
    return fig


def speed_histogram(series: Sequence[tuple[str, SpeedProfile]], p: float) -> Figure:
    """Histogram of the sample speeds; the rate sustained by all but *p* % of them marked."""
    fig = Figure(figsize=_SIZE, layout="constrained")
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
