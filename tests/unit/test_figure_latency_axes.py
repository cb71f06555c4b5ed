"""Latency axes in the unit the tables use: µs, ms or s, under four digits before the point.

A latency graph's axis ran to ``1,200,000`` (µs) while the tables said ``2.16 s``. Every
figure that draws a latency is drawn here with latencies of seconds (and of microseconds)
and each axis whose label says latency is read back after :func:`render`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from matplotlib.axis import Axis
from matplotlib.figure import Figure

from pytest_ssd.analysis.fill import FillPass
from pytest_ssd.figures import latency_percentiles, render
from pytest_ssd.figures.history import history_figure
from pytest_ssd.figures.latency import LatencySample, TailCurve, distribution, tail_curves
from pytest_ssd.figures.steady import snia_convergence, snia_window
from pytest_ssd.methods.csd.figures.fill import DriveFill, latency_vs_time, latency_vs_time_drives
from pytest_ssd.methods.esd.figures import (
    PreconditionLog,
    QosCurve,
    precondition_figure,
    qos_figure,
)
from pytest_ssd.methods.snia.figures import CellTable, by_block_size
from pytest_ssd.results.history import HistoryRow
from pytest_ssd.results.record import Measurement
from pytest_ssd.steady.snia import evaluate

UNIT = re.compile(r"\((µs|ms|s)\)$")


def unscaled(fig: Figure) -> list[str]:
    """What is wrong with *fig*'s latency axes once rendered: a label without its unit,
    a tick of four digits or more before the point."""
    render(fig)
    found = []
    axes = [*fig.axes, *(child for ax in fig.axes for child in ax.child_axes)]
    latency_axes = [a for ax in axes for a in (ax.xaxis, ax.yaxis) if _is_latency(a)]
    assert latency_axes, "the figure draws a latency"
    for axis in latency_axes:
        label = axis.get_label_text()
        if not UNIT.search(label):
            found.append(f"label without µs/ms/s: {label!r}")
        ticks = _shown_ticks(axis)
        assert ticks, label
        big = [t for t in ticks if abs(float(t.replace(",", "").replace("−", "-"))) >= 1000]
        if big:
            found.append(f"{label!r}: ticks {big}")
    return found


#: a number as a figure's text writes it (1,234.5, 2.16426e+06), with its unit if any
NUMBER = re.compile(r"(\d[\d,]*)(?:\.\d+)?(e[+-]?\d+)?(?: ?(µs|ms|s)\b)?")


def unscaled_text(fig: Figure) -> list[str]:
    """The legend entries and titles of *fig* once rendered that write a number in
    e-notation or of four digits or more before the point: in a latency figure that
    is a latency left in µs (a window's mean, a slope, an interval)."""
    render(fig)
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    texts = [t.get_text() for legend in legends for t in legend.get_texts()]
    texts += [t.get_text() for ax in fig.axes for t in (ax.title, *ax.texts)]
    return [
        text
        for text in texts
        for whole, exponent, _ in NUMBER.findall(text)
        if exponent or int(whole.replace(",", "")) >= 1000
    ]


def _shown_ticks(axis: Axis) -> list[str]:
    """The tick labels drawn: those of ticks inside the view (matplotlib keeps others)."""
    low, high = sorted(axis.get_view_interval())
    majors = axis.get_major_ticks(len(axis.get_majorticklocs()))
    minors = axis.get_minor_ticks(len(axis.get_minorticklocs()))
    return [
        tick.label1.get_text()
        for tick in (*majors, *minors)
        if tick.label1.get_text() and low - 1e-9 * abs(low) <= tick.get_loc() <= high * (1 + 1e-9)
    ]


def _is_latency(axis: Axis) -> bool:
    return "latency" in axis.get_label_text()


def _measurement(us: list[float]) -> Measurement:
    points = [
        {"p": p, "us": v, "resolved": True}
        for p, v in zip((90.0, 99.0, 99.9, 99.99), us, strict=True)
    ]
    metrics = {"read": {"iops": 12.0, "clat": {"percentiles": points}}}
    return Measurement("t", "d", "job", {"label": "RND 4K"}, metrics, "", "", "")


def _sample(scale_ns: float) -> LatencySample:
    bins = [(int(scale_ns * k), 1000 // k) for k in (1, 2, 3, 5, 8, 13)]
    return LatencySample.of_bins("drive A", 12.0, bins)


def _fill(lat_ms: float) -> FillPass:
    t = np.arange(1.0, 51.0)
    bw = np.full(50, 100.0 * 2**20)
    written = np.cumsum(bw)
    return FillPass("pass 1", t, bw, written, t, np.linspace(0.2, 1, 50) * lat_ms * 1e6, 1, 50.0)


def _cells(us: float) -> CellTable:
    meta = {"mixes": [100, 0], "block_sizes": [4096, 131072]}
    cells = [
        {"read_pct": mix, "block_size": bs, "clat_mean_us": us * (1 + k)}
        for k, (mix, bs) in enumerate([(m, b) for m in (100, 0) for b in (4096, 131072)])
    ]
    return CellTable.of(meta, cells, "clat_mean_us")


def _log(us: float) -> PreconditionLog:
    t = np.arange(1.0, 31.0)
    return PreconditionLog("drive A", t, np.full(30, 9000.0), t * us / 30, "IOPS", 10.0, None)


def _history(run: str, us: float) -> HistoryRow:
    percentiles: dict[float, float | None] = {99.0: us}
    return HistoryRow(
        run, "2026-11-26T10:00", "A", "1.0", "S1", "read", 1, 9.0, 1.0, percentiles, "fio"
    )


FIGURES: dict[str, Callable[[float], Figure]] = {
    "tail latency of a measurement": lambda us: latency_percentiles(
        _measurement([us, 2 * us, 3 * us, 4 * us])
    ),
    "latency distribution": lambda us: distribution([_sample(us * 1000)], "RND 4K QD1"),
    "tail curves": lambda us: tail_curves([TailCurve.of(_sample(us * 1000))], "RND 4K QD1 tail"),
    "fill latency": lambda us: latency_vs_time([_fill(us / 1000)], 5.0),
    "fill latency of drives": lambda us: latency_vs_time_drives(
        {"drive A": DriveFill((_fill(us / 1000),))}, {"drive A": "#1f77b4"}
    ),
    "esd QoS": lambda us: qos_figure([QosCurve("drive A", _sample(us * 1000), us)], "QoS"),
    "esd preconditioning": lambda us: precondition_figure([_log(us)], "WIPC"),
    "snia latency by block size": lambda us: by_block_size(_cells(us), "SNIA latency"),
    "snia convergence": lambda us: snia_convergence(
        evaluate([us * f for f in (1.3, 1.1, 1.0, 1.02, 0.99)]),
        quantity="mean completion latency",
        unit="µs",
    ),
    "history": lambda us: history_figure([_history("run-1", us), _history("run-2", 2 * us)], "h"),
    "snia window": lambda us: snia_window(
        evaluate([us * f for f in (1.3, 1.1, 1.0, 1.02, 0.99)]),
        quantity="mean completion latency",
        unit="µs",
    ),
}


@pytest.mark.parametrize("us", [2_164_260.86, 38_000.0, 45.0], ids=["seconds", "ms", "µs"])
@pytest.mark.parametrize("name", list(FIGURES))
def test_a_latency_axis_is_in_its_unit(name: str, us: float) -> None:
    assert unscaled(FIGURES[name](us)) == []


@pytest.mark.parametrize("us", [2_164_260.86, 38_000.0, 45.0], ids=["seconds", "ms", "µs"])
@pytest.mark.parametrize("name", list(FIGURES))
def test_a_latency_in_a_legend_or_title_is_in_its_unit(name: str, us: float) -> None:
    assert unscaled_text(FIGURES[name](us)) == []


def test_the_snia_window_legend_gives_mean_and_slope_in_the_axis_unit() -> None:
    fig = FIGURES["snia window"](2_164_260.86)
    render(fig)
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert "mean 2.34 s" in texts, texts
    assert "least-squares line, slope -0.1515 s/round" in texts, texts
    assert fig.axes[0].get_ylabel() == "mean completion latency (s)"
    assert "of mean 2.34 s" in fig.axes[0].get_title()


def test_an_unscaled_legend_is_found() -> None:
    # the check itself: the window legend and title as they were written before
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([1, 2], [1, 2], label="mean 2.34e+06 µs")
    ax.plot([1, 2], [1, 2], label="least-squares line, slope -1,515 µs/round")
    ax.set_title("range 28.7 % > 20 % of mean 2,340,000")
    ax.legend()
    assert len(unscaled_text(fig)) == 3


def test_seconds_of_latency_read_in_seconds() -> None:
    fig = latency_percentiles(_measurement([2_164_260.86, 3e6, 4e6, 5e6]))
    render(fig)
    (ax,) = fig.axes
    assert ax.get_ylabel() == "completion latency (s)"
    ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "3" in ticks or "3.0" in ticks, ticks


def test_an_unscaled_axis_is_found() -> None:
    # the check itself: a figure as they were drawn before fails it
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([1, 2], [2_164_260.86, 1_200_000])
    ax.set_ylabel("completion latency (µs)")
    assert unscaled(fig) != []
