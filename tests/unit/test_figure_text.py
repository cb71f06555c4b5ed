"""Numbers on graphs a reviewer can read: bar values with their digits, plain log ticks."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pytest_ssd.analysis.fill import FillPass
from pytest_ssd.figures import linear_number, render, thousands, value_labels, value_text
from pytest_ssd.methods.csd.figures.fill import DriveFill, bw_vs_data_drives


@pytest.mark.parametrize(
    ("value", "text"),
    [(1448.03, "1,448"), (100.0, "100"), (14.83, "14.8"), (0.82, "0.82"), (0.0, "0")],
)
def test_a_bar_value_keeps_its_digits(value: float, text: str) -> None:
    # k-IOPS at QD1 read "0" before: 0.82 kIOPS is 820 IOPS, not nothing
    assert value_text(value) == text


def test_bars_are_labelled_upright_and_log_ticks_read_as_numbers() -> None:
    fig = Figure()
    ax = fig.add_subplot()
    bars = ax.bar(["QD1", "QD32"], [0.82, 98.4])
    value_labels(ax, bars)
    ax.set_yscale("log")
    ax.set_ylim(1, 20_000)
    thousands(ax.yaxis)
    FigureCanvasAgg(fig).draw()  # type: ignore[no-untyped-call]
    assert [t.get_text() for t in ax.texts] == ["0.82", "98.4"]
    assert all(t.get_rotation() == 0 for t in ax.texts)
    ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "1,000" in ticks and "10,000" in ticks and not any("10^" in t or "$" in t for t in ticks)


def test_thousands_of_log_windows_get_their_moving_average_on_top() -> None:
    n, mib = 2000, float(1 << 20)
    rng = np.random.default_rng(7)
    bw = rng.choice([200.0, 1400.0], n) * mib  # a barcode: 10 ms windows, bursty
    written = np.cumsum(bw * 0.01)
    t = np.arange(1, n + 1) * 0.01
    one = FillPass("pass 1", t, bw, written, t, np.full(n, 1e5), int(written[-1]), n * 0.01)
    fig = bw_vs_data_drives({"drive A": DriveFill((one,))}, {"drive A": "#1f77b4"})
    (ax,) = fig.axes
    (line,) = ax.get_lines()
    assert line.get_label() == "drive A", "one legend entry per drive, as without smoothing"
    title = ax.get_legend().get_title().get_text()
    assert title == "lines: moving average of 50 log windows; faint: each window"
    assert 650 < float(np.mean(line.get_ydata())) < 950, "the mean of the raw windows"
    raw = float(np.std(bw / mib))
    assert float(np.std(line.get_ydata())) < 0.35 * raw, "smoother than the raw windows"


def test_linear_axes_read_with_thousands_separators() -> None:
    fig = Figure(layout="constrained")
    ax = fig.add_subplot()
    ax.plot([0, 1.5, 3], [90_000, 120_000, 250_000])
    iops = ax.secondary_yaxis("right", functions=(lambda v: v * 4, lambda v: v / 4))
    bars = fig.add_subplot()
    bars.bar(["QD1", "QD32"], [1, 2])
    nines = fig.add_subplot()
    nines.set_yticks([90, 99.9], ["90", "99.9"])  # labels of its own: kept
    render(fig)
    assert ax.xaxis.get_major_formatter()(1.5, 0) == "1.5"
    ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "100,000" in ticks and "200,000" in ticks, ticks
    assert not ax.yaxis.get_offset_text().get_text(), "no '1e5' offset over the axis"
    assert "400,000" in [t.get_text() for t in iops.get_yticklabels()], "the secondary axis too"
    assert [t.get_text() for t in bars.get_xticklabels()] == ["QD1", "QD32"]
    assert [t.get_text() for t in nines.get_yticklabels()] == ["90", "99.9"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(100000.0, "100,000"), (2500.5, "2,500.5"), (0.25, "0.25"), (0.0, "0"), (-1500.0, "-1,500")],
)
def test_a_linear_tick(value: float, text: str) -> None:
    assert linear_number(value) == text
