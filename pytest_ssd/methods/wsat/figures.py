"""Write-saturation graphs: IOPS against time and against GiB written, steady region shaded.

Each drive is a :class:`WsatCurve`: its log windows (a thin line), its round
means (markers: what the SNIA rule judged) and its steady-state region, shaded
in the drive's colour on both axes (on the GiB axis at the bytes written when
the region's rounds began and ended).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pytest_ssd.figures import Health, legend_below, temperature_axis
from pytest_ssd.methods.wsat.workloads import SteadyRegion, WsatLog

GiB = 1 << 30
Floats = npt.NDArray[np.float64]
_SIZE = (6.4, 3.8)


@dataclass(frozen=True, eq=False)
class WsatCurve:
    """One drive's WSAT run as drawn."""

    label: str
    colour: str
    t_s: Floats
    iops: Floats
    written_gib: Floats
    round_s: float
    round_iops: Floats
    #: steady stretches of rounds as (first, last) round numbers from 1
    spans: tuple[tuple[int, int], ...]

    @classmethod
    def of(
        cls, label: str, colour: str, log: WsatLog, region: SteadyRegion, round_s: float
    ) -> WsatCurve:
        rounds = np.array(region.rounds, dtype=float)
        return cls(
            label, colour, log.t_s, log.iops, log.written / GiB, round_s, rounds, region.spans
        )

    @classmethod
    def of_series(
        cls, label: str, colour: str, meta: Mapping[str, Any], arrays: Mapping[str, Any]
    ) -> WsatCurve:
        """From the ``wsat-<workload>`` series and derived record's region."""
        region = meta["region"]
        spans = tuple((int(a), int(b)) for a, b in region["spans"])
        return cls(
            label,
            colour,
            np.asarray(arrays["t_s"], dtype=float),
            np.asarray(arrays["iops"], dtype=float),
            np.asarray(arrays["written"], dtype=float) / GiB,
            float(region["round_s"]),
            np.asarray(arrays["round_iops"], dtype=float),
            spans,
        )

    @property
    def round_end_s(self) -> Floats:
        ends: Floats = np.arange(1, len(self.round_iops) + 1, dtype=np.float64) * self.round_s
        return ends

    def seconds(self) -> list[tuple[float, float]]:
        """Each steady stretch as (start, end) seconds."""
        return [((a - 1) * self.round_s, b * self.round_s) for a, b in self.spans]

    def gib_at(self, t_s: float) -> float:
        """GiB written at time *t_s* (the log's integral, interpolated)."""
        times = np.concatenate(([0.0], self.t_s))
        done = np.concatenate(([0.0], self.written_gib))
        return float(np.interp(t_s, times, done))


def _steady(ax: Axes, curve: WsatCurve, spans: Sequence[tuple[float, float]], named: bool) -> None:
    for index, (start, end) in enumerate(spans):
        label = f"{curve.label}: steady state (SNIA rule)" if named and index == 0 else None
        ax.axvspan(start, end, color=curve.colour, alpha=0.12, label=label)


def _finish(fig: Figure, ax: Axes, title: str, xlabel: str) -> Figure:
    ax.set_xlabel(xlabel)
    ax.set_ylabel("IOPS")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize="small")
    ax.grid(True, alpha=0.3)
    legend_below(fig, ax)
    return fig


def iops_vs_time(curves: Sequence[WsatCurve], title: str, health: Health = None) -> Figure:
    """IOPS per log window and per round against time, the steady region shaded.

    *health*: the device's temperature during the run (one drive's graph), dashed on the right.
    """
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    temperature_axis(ax, health)
    for curve in curves:
        ax.plot(curve.t_s, curve.iops, color=curve.colour, linewidth=0.6, alpha=0.6)
        label = f"{curve.label}: per {curve.round_s:g} s round"
        middle = curve.round_end_s - curve.round_s / 2
        ax.plot(middle, curve.round_iops, "o", markersize=3, color=curve.colour, label=label)
        _steady(ax, curve, curve.seconds(), named=True)
    return _finish(fig, ax, f"WSAT {title}: IOPS vs time", "time (s)")


def iops_vs_written(curves: Sequence[WsatCurve], title: str) -> Figure:
    """IOPS per log window against the GiB written so far, the steady region shaded."""
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    for curve in curves:
        ax.plot(curve.written_gib, curve.iops, color=curve.colour, linewidth=0.8, label=curve.label)
        spans = [(curve.gib_at(a), curve.gib_at(b)) for a, b in curve.seconds()]
        _steady(ax, curve, spans, named=True)
    return _finish(fig, ax, f"WSAT {title}: IOPS vs data written", "total GiB written")
