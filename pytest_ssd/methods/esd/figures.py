"""The enterprise suite's graphs (METHOD §5), for one drive (the test's row) or several.

* sweeps: MiB/s (SEQ) or IOPS (RND) against block size or outstanding I/Os;
* preconditioning: bandwidth (SEQ) or IOPS (RND) and mean latency against time
  over WIPC and WDPC, the steady-state window shaded, and a zoomed view of the
  WDPC part (its time span, its 1st to 99th percentile of values): seed 001
  shows both because the full view's peaks flatten what steady state looks like;
* QoS at QD1: the latency distribution on seed 001's percentile axis (linear
  to 90 %, one step per nine above) and the table datasheets quote: typical
  (mean), p99, p99.99; any measurement's fio percentiles on the same axes
  (:func:`qos_percentiles`, the method's figure kind for ``ssd.plot``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from pytest_ssd.figures import (
    PALETTE,
    Health,
    latency_axis,
    legend_below,
    temperature_axis,
    thousands,
    value_axis,
)
from pytest_ssd.figures.latency import NOT_RESOLVED, LatencySample
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.fio.results import Percentile
from pytest_ssd.results.record import Measurement
from pytest_ssd.text import latency

Floats = npt.NDArray[np.float64]
#: the nines axis starts where the linear part ends
LINEAR_TO = 90.0
NINE_TICKS = (0.0, 30.0, 60.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)


def _colour(colours: Mapping[str, str] | None, label: str, index: int) -> str:
    return (colours or {}).get(label, PALETTE[index % len(PALETTE)])


@dataclass(frozen=True)
class SweepCurve:
    """One drive's points of a sweep: x (bytes or outstanding I/Os) and the value."""

    label: str
    xs: tuple[int, ...]
    ys: tuple[float, ...]
    names: tuple[str, ...] = ()
    #: workers (fio numjobs) of each point; empty: one each.  A point of several
    #: workers (QD32 x 4 at x = 128) is no point of the one-worker QD line
    workers: tuple[int, ...] = ()

    def split(self) -> tuple[list[tuple[int, float]], dict[int, list[tuple[int, float]]]]:
        """The one-worker points, and the others by their number of workers."""
        counts = self.workers or (1,) * len(self.xs)
        line = [(x, y) for x, y, n in zip(self.xs, self.ys, counts, strict=True) if n == 1]
        others: dict[int, list[tuple[int, float]]] = {}
        for x, y, n in zip(self.xs, self.ys, counts, strict=True):
            if n > 1:
                others.setdefault(n, []).append((x, y))
        return line, others


def sweep_figure(
    curves: Sequence[SweepCurve],
    title: str,
    axis: str,
    unit: str,
    colours: Mapping[str, str] | None = None,
) -> Figure:
    """Value against block size or QD (log 2 axis), one line per drive."""
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    ticks: set[int] = set()
    for index, curve in enumerate(curves):
        colour = _colour(colours, curve.label, index)
        line, others = curve.split()
        if line:
            xs, ys = zip(*line, strict=True)
            ax.plot(xs, ys, marker="o", color=colour, label=curve.label)
        for marker, (workers, points) in zip("DsP^", sorted(others.items()), strict=False):
            xs, ys = zip(*points, strict=True)
            qds = ", ".join(f"QD{x // workers}" for x in xs)
            ax.plot(
                xs,
                ys,
                linestyle="none",
                marker=marker,
                markersize=8,
                color=colour,
                markerfacecolor="none",
                label=f"{curve.label}: {workers} workers × {qds}",
            )
        ticks.update(curve.xs)
    ax.set_xscale("log", base=2)
    ordered = sorted(ticks)
    ax.xaxis.set_major_locator(FixedLocator(ordered))
    ax.xaxis.set_minor_locator(NullLocator())
    names = (
        [format_bytes(x) for x in ordered] if axis == "block size" else [str(x) for x in ordered]
    )
    ax.set_xticklabels(names, rotation=30 if axis == "block size" else 0, fontsize="small")
    ax.set_xlabel(axis)
    value_axis(ax.yaxis, "mean latency" if unit == "µs" else unit, unit)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    legend_below(fig, ax)
    return fig


@dataclass(frozen=True, eq=False)
class PreconditionLog:
    """A preconditioning's logs: time (s), value (MiB/s or IOPS), mean latency (µs)."""

    label: str
    t_s: Floats
    value: Floats
    lat_us: Floats
    unit: str
    #: where WDPC starts (s) and the steady-state window (s), None when not attained
    wdpc_start_s: float
    window: tuple[float, float] | None


def _shade(ax: Axes, log: PreconditionLog, colour: str) -> None:
    ax.axvline(log.wdpc_start_s, color="grey", linewidth=0.8)
    if log.window is not None:
        ax.axvspan(*log.window, color=colour, alpha=0.15)


def _series(
    ax: Axes, logs: Sequence[PreconditionLog], colours: Mapping[str, str] | None, latency: bool
) -> None:
    for index, log in enumerate(logs):
        colour = _colour(colours, log.label, index)
        ys = log.lat_us if latency else log.value
        ax.plot(log.t_s, ys, color=colour, linewidth=0.8, label=log.label)
        _shade(ax, log, colour)
    if latency:
        latency_axis(ax.yaxis, "mean latency")
    else:
        ax.set_ylabel(logs[0].unit)
    ax.grid(True, alpha=0.3)


def precondition_figure(
    logs: Sequence[PreconditionLog],
    title: str,
    colours: Mapping[str, str] | None = None,
    health: Health = None,
) -> Figure:
    """Bandwidth or IOPS and latency against time over WIPC and WDPC (grey line: WDPC starts;
    shaded: the steady-state window fio judged); *health*: one drive's temperature, dashed."""
    fig = Figure(figsize=(6.4, 5.4), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    temperature_axis(top, health)
    _series(top, logs, colours, latency=False)
    _series(bottom, logs, colours, latency=True)
    top.set_ylim(bottom=0)
    top.set_title(title, fontsize="medium")
    bottom.set_xlabel("time (s)")
    legend_below(fig, top)
    return fig


def _robust(values: Floats) -> tuple[float, float]:
    low, high = np.percentile(values, (1, 99)) if len(values) else (0.0, 1.0)
    margin = max((high - low) * 0.15, abs(high) * 0.02, 1e-9)
    return float(low - margin), float(high + margin)


def precondition_zoom(
    logs: Sequence[PreconditionLog], title: str, colours: Mapping[str, str] | None = None
) -> Figure:
    """The WDPC part only, values between their 1st and 99th percentile: steady state close up."""
    fig = Figure(figsize=(6.4, 5.4), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    _series(top, logs, colours, latency=False)
    _series(bottom, logs, colours, latency=True)
    parts = [(log, log.t_s >= log.wdpc_start_s) for log in logs]
    start = min(log.wdpc_start_s for log in logs)
    end = max(float(log.t_s[-1]) if len(log.t_s) else start + 1 for log in logs)
    top.set_xlim(start, max(end, start + 1e-3))
    for ax, pick in ((top, "value"), (bottom, "lat_us")):
        values = np.concatenate([getattr(log, pick)[mask] for log, mask in parts])
        ax.set_ylim(*_robust(values))
    top.set_title(f"{title}: WDPC close up (1st-99th percentile)", fontsize="medium")
    bottom.set_xlabel("time (s)")
    legend_below(fig, top)
    return fig


def nines_forward(p: npt.ArrayLike) -> Floats:
    """Percentile -> axis position: p / 90 up to 90 %, then one unit per nine (99 % -> 2)."""
    arr = np.clip(np.asarray(p, dtype=np.float64), 0.0, 100.0 - 1e-12)
    tail = np.log10(100.0 / (100.0 - np.maximum(arr, LINEAR_TO)))
    return np.where(arr <= LINEAR_TO, arr / LINEAR_TO, tail)


def nines_inverse(y: npt.ArrayLike) -> Floats:
    arr = np.asarray(y, dtype=np.float64)
    return np.where(arr <= 1.0, arr * LINEAR_TO, 100.0 - 100.0 / 10 ** np.maximum(arr, 1.0))


@dataclass(frozen=True, eq=False)
class QosCurve:
    """One QoS workload of one drive: its latency sample and the table's values."""

    label: str
    sample: LatencySample
    mean_us: float


def qos_figure(
    curves: Sequence[QosCurve], title: str, colours: Mapping[str, str] | None = None
) -> Figure:
    """Percentile (linear to 90 %, nines above) against latency (µs, log), one line each."""
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    ax = fig.add_subplot()
    top = LINEAR_TO
    for index, curve in enumerate(curves):
        xs, shares = curve.sample.cdf()
        limit = 100.0 * (1 - 1 / curve.sample.total)
        ys = np.minimum(shares, limit)
        top = max(top, limit)
        ax.step(
            np.concatenate(([xs[0]], xs)),
            np.concatenate(([0.0], ys)),
            where="post",
            color=_colour(colours, curve.label, index),
            label=f"{curve.label} (mean {latency(curve.mean_us)})",
        )
    _qos_axes(ax, top, title)
    return fig


def _qos_axes(ax: Axes, top: float, title: str) -> None:
    """Percentile up the side (linear to 90 %, nines above, to *top*), latency along (log)."""
    ax.set_yscale("function", functions=(nines_forward, nines_inverse))
    ticks = [p for p in NINE_TICKS if p <= top]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{p:g}" for p in ticks])
    ax.set_ylim(0, top)
    ax.set_xscale("log")
    thousands(ax.xaxis)
    latency_axis(ax.xaxis, "completion latency")
    ax.set_ylabel("percentile of I/Os (%)")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")  # slow and rare: no curve goes there


def qos_percentiles(measurement: Measurement) -> Figure:
    """A measurement's completion-latency percentiles on the QoS graph's axes, one line per
    direction (``ssd.plot("qos_percentiles", ...)``: fio's percentiles, not the histogram)."""
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    ax = fig.add_subplot()
    top = LINEAR_TO
    for index, (direction, data) in enumerate(sorted(measurement.metrics.items())):
        points = (data.get("clat") or {}).get("percentiles", [])
        if not points:
            continue
        top = max([top, *(float(item["p"]) for item in points)])
        ax.step(
            [float(item["us"]) for item in points],
            [float(item["p"]) for item in points],
            where="post",
            marker=".",
            color=PALETTE[index % len(PALETTE)],
            label=f"{direction} (mean {latency(float(data['lat_mean_us']))})",
        )
    _qos_axes(ax, top, f"{measurement.workload.get('label', measurement.name)}: QoS")
    return fig


def qos_cells(curve: QosCurve, nines: Sequence[float]) -> list[str]:
    """Mean, then each percentile in µs ('n/r' when the sample cannot resolve it)."""
    found: tuple[Percentile, ...] = curve.sample.percentiles(nines)
    cells = [f"{curve.mean_us:,.1f}"]
    cells += [f"{p.ns / 1000:,.1f}" if p.resolved else NOT_RESOLVED for p in found]
    return cells
