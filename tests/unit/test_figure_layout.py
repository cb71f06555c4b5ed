"""Graphs that fit the report: 1,300 px wide at most, a row's graphs one height, legends off."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from pytest_ssd.figures import MAX_WIDTH_PX, PAD_INCHES, render, thousands
from pytest_ssd.methods.csd.figures.grid import Grid, grid_bars, grid_of, results_grid
from pytest_ssd.methods.csd.figures.lowqd import ranking_bars, ratio_curves, weighted_curves
from pytest_ssd.methods.csd.workloads.profiles import CdmTest
from tests.unit.test_lowqd import matrix

MiB = 1 << 20


def size_px(fig: Figure) -> tuple[int, int]:
    """The PNG's pixel size, as the report embeds it."""
    with Image.open(io.BytesIO(render(fig).png)) as image:
        return image.size


def grids() -> list[Grid]:
    rows = (CdmTest("seq", MiB, 8), CdmTest("seq", MiB, 1), CdmTest("rnd", 4096, 32, 16))
    return [grid_of(name, rows, ()) for name in ("Default", "NVMe", "Peak")]


def test_the_widest_graphs_fit_a_1400_px_window_and_are_cropped_after_their_layout() -> None:
    drives = {f"drive {n}": grids() for n in range(3)}
    colours = dict(zip(drives, ("#1f77b4", "#d62728", "#2ca02c"), strict=True))
    wide = grid_bars(drives, colours, "Quick profiles at FOB")
    width, _ = size_px(wide)
    # constrained layout places the axes at draw time: cropped before it, the tick labels were cut
    assert wide.get_figwidth() * 100 <= width <= MAX_WIDTH_PX
    width, _ = size_px(results_grid(grids(), "three grids: two a row"))
    assert width <= MAX_WIDTH_PX


def test_a_low_qd_matrixs_graphs_share_one_height() -> None:
    matrices = {"drive A": matrix(), "drive B": matrix(0.5)}
    figures = [
        ratio_curves(matrices["drive A"], "drive A"),
        weighted_curves(matrices),
        ranking_bars({"drive A": 300.0, "drive B": 150.0}, "ranking"),
    ]
    heights = {size_px(fig)[1] for fig in figures}
    assert max(heights) - min(heights) <= 2, heights
    for fig in figures[:2]:
        assert fig.axes[0].get_legend() is None and len(fig.legends) == 1, "legend under the axes"


def test_a_narrow_log_axis_labels_thousands_between_its_decades() -> None:
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([500.0, 8000.0], [0.0, 1.0])
    ax.set_xscale("log")
    thousands(ax.xaxis)
    FigureCanvasAgg(fig).draw()  # type: ignore[no-untyped-call]
    lo, hi = ax.get_xlim()
    shown = [
        t.get_text()
        for t in (*ax.get_xticklabels(), *ax.get_xticklabels(minor=True))
        if t.get_text() and lo <= t.get_position()[0] <= hi
    ]
    assert {"1,000", "2,000", "4,000"} <= set(shown), shown
    assert not any("$" in t or "e" in t for t in shown)
    assert np.isclose(ax.xaxis.get_minor_ticks()[0].label1.get_fontsize(), 10.0)


def test_the_crop_is_what_the_pixels_show_and_keeps_what_reaches_past_the_canvas() -> None:
    inside = Figure(figsize=(4.0, 3.0), layout="constrained")
    inside.add_subplot().plot([0, 1], [0, 1])
    width, height = size_px(inside)
    # constrained layout keeps it on the canvas: the drawn pixels and the pad around them
    assert 400 <= width <= 400 + 20 and 300 <= height <= 300 + 20, (width, height)
    beyond = Figure(figsize=(4.0, 3.0))
    beyond.add_subplot().plot([0, 1], [0, 1])
    beyond.text(-0.3, 0.5, "a label that starts left of the canvas")
    width, _ = size_px(beyond)  # cut at the edge: measured as matplotlib's tight box instead
    assert width > 400 + 2 * PAD_INCHES * 100, f"{width} px: the label was cut at the canvas"
