"""Value labels drawn by the real Agg renderer: no two overlap (they read 7,6357,963)."""

from __future__ import annotations

from itertools import combinations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pytest_ssd.figures import render
from pytest_ssd.report.sections.base import Palette
from pytest_ssd.report.sections.workloads import Bars, grouped_bars


def overlapping(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of visible texts of one axes (its title too) whose boxes overlap, as drawn."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    pairs = []
    for ax in fig.axes:
        texts = [t for t in (*ax.texts, ax.title) if t.get_visible() and t.get_text()]
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
        pairs += [(a, b) for (a, box), (b, other) in combinations(boxes, 2) if box.overlaps(other)]
    return pairs


@pytest.mark.parametrize(("workloads", "shown"), [(4, 8), (8, 16), (24, 0)])
def test_two_drives_bars_have_no_label_over_another(workloads: int, shown: int) -> None:
    # close values side by side: "7,635" and "7,963" were drawn into each other
    bars: Bars = {
        f"workload {n}": {"drive A": (7635.0 + 11 * n, 0.0), "drive B": (7963.0 + 7 * n, 0.0)}
        for n in range(workloads)
    }
    fig = grouped_bars([("MiB/s", bars)], Palette(("drive A", "drive B")))
    render(fig)
    assert overlapping(fig) == []
    # upright while they fit, turned and smaller next, left out (the table has them) last
    assert len([t for ax in fig.axes for t in ax.texts if t.get_visible()]) == shown
