"""Steady-state graphs: what each figure draws, and that it renders to PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from pytest_ssd.figures import render
from pytest_ssd.figures.steady import fio_steadystate, snia_convergence, snia_window
from pytest_ssd.fio.results import parse_output
from pytest_ssd.steady import FioSteadyState, SniaVerdict, evaluate

GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
PNG = b"\x89PNG\r\n\x1a\n"


def reached() -> SniaVerdict:
    # window rounds 3-7, mean 60000, slope -800, intercept 64000 (see test_steady_snia)
    return evaluate([100_000, 80_000, 64_000, 60_000, 56_000, 60_000, 60_000])


def fio_state(name: str) -> FioSteadyState:
    state = parse_output((GOLDEN / name).read_text()).jobs[0].steadystate
    assert state is not None
    return state


def xs(line: Line2D) -> list[float]:
    return [float(v) for v in np.asarray(line.get_xdata())]


def ys(line: Line2D) -> list[float]:
    return [float(v) for v in np.asarray(line.get_ydata())]


def only_axes(fig: Figure) -> tuple[list[str], list[Rectangle], str, str, str]:
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    patches = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(patches) == len(ax.patches)
    labels = [str(line.get_label()) for line in ax.lines]
    assert render(fig).png.startswith(PNG)
    return labels, patches, ax.get_title(), ax.get_xlabel(), ax.get_ylabel()


def test_convergence_shades_the_window_and_titles_the_verdict() -> None:
    fig = snia_convergence(reached(), quantity="4 KiB random write", unit="IOPS")
    labels, patches, title, xlabel, ylabel = only_axes(fig)
    assert labels == ["4 KiB random write"]
    (values,) = fig.axes[0].lines
    assert xs(values) == [1, 2, 3, 4, 5, 6, 7]
    assert ys(values) == [100_000, 80_000, 64_000, 60_000, 56_000, 60_000, 60_000]
    (window,) = patches
    assert (window.get_x(), window.get_x() + window.get_width()) == (2.5, 7.5)
    assert title.startswith("SNIA convergence: steady state reached at round 7\nrange 13.3 %")
    assert (xlabel, ylabel) == ("round", "4 KiB random write (IOPS)")


def test_convergence_not_reached() -> None:
    verdict = evaluate([100.0 if r % 2 else 130.0 for r in range(1, 26)])
    fig = snia_convergence(verdict, quantity="bandwidth", unit="MiB/s")
    _, (window,), title, _, ylabel = only_axes(fig)
    assert (window.get_x(), window.get_width()) == (20.5, 5.0)
    assert "steady state not reached after 25 rounds" in title
    assert ylabel == "bandwidth (MiB/s)"


def test_measurement_window_has_values_mean_band_and_fit() -> None:
    fig = snia_window(reached(), unit="IOPS")
    labels, (band,), title, xlabel, ylabel = only_axes(fig)
    assert len(labels) == 3
    data, mean, fit = fig.axes[0].lines
    assert xs(data) == [3, 4, 5, 6, 7]
    assert ys(data) == [64_000, 60_000, 56_000, 60_000, 60_000]
    assert ys(mean) == [60_000, 60_000]
    # the line y = -800 * round + 64000 at rounds 3..7
    assert np.allclose(ys(fit), [61_600, 60_800, 60_000, 59_200, 58_400])
    # a 20 % range limit drawn as mean +- 10 %
    assert band.get_y() == pytest.approx(54_000)
    assert band.get_y() + band.get_height() == pytest.approx(66_000)
    assert "mean ± 10 %" in str(band.get_label())
    assert title.startswith("SNIA measurement window: steady state reached at round 7")
    assert (xlabel, ylabel) == ("round", "tracked variable (IOPS)")


@pytest.mark.parametrize(
    ("name", "outcome"),
    [
        ("ss_bw_slope_attained.json", "fio steady state attained\n"),
        ("ss_bw_slope_not_attained.json", "fio steady state not attained\n"),
    ],
)
def test_fio_slope_plot_has_samples_mean_and_fios_line(name: str, outcome: str) -> None:
    state = fio_state(name)
    fig = fio_steadystate(state)
    labels, patches, title, xlabel, ylabel = only_axes(fig)
    assert len(labels) == 3 and patches == []
    data, mean, fit = fig.axes[0].lines
    assert xs(data) == [0, 1, 2, 3, 4]
    assert ys(data) == [b / 2**20 for b in state.bw_bytes_s]
    mib = np.array(state.bw_bytes_s) / 2**20
    assert ys(mean)[0] == pytest.approx(mib.mean())
    # fio's own slope (bytes/s per s) drawn through the samples' centre
    assert np.allclose(ys(fit), np.polyval(np.polyfit(np.arange(5), mib, 1), np.arange(5)))
    assert title.startswith(outcome)
    assert (xlabel, ylabel) == ("time in the steady-state window (s)", "bandwidth (MiB/s)")


def test_fio_deviation_plot_has_the_allowed_band() -> None:
    state = fio_state("ss_iops_deviation_attained.json")
    fig = fio_steadystate(state)
    labels, (band,), title, _, ylabel = only_axes(fig)
    assert len(labels) == 2
    # iops mean 39355, limit 20 %: 31484 .. 47226
    assert band.get_y() == pytest.approx(39_355 * 0.8)
    assert band.get_y() + band.get_height() == pytest.approx(39_355 * 1.2)
    assert ys(fig.axes[0].lines[0]) == list(state.iops)
    assert title.startswith("fio steady state attained\niops 11.20 %")
    assert ylabel == "I/O rate (IOPS)"
