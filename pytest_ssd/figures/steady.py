"""Steady-state graphs: SNIA convergence and measurement window, fio's per-second samples.

Each function returns a matplotlib ``Figure`` (no pyplot state); render it with
:func:`pytest_ssd.figures.render`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from pytest_ssd.figures import PALETTE, legend_below, render, value_axis
from pytest_ssd.steady import FioSteadyState, SniaVerdict
from pytest_ssd.text import latency, rate, significant

_SIZE = (6.4, 3.6)
_DATA, _MEAN, _FIT = PALETTE[0], PALETTE[1], PALETTE[2]


def _finish(fig: Figure, ax: Axes, summary: str, heading: str = "") -> Figure:
    # the summary's outcome ("steady state reached at round 7") goes on the first line
    outcome, _, checks = summary.partition(": ")
    first = f"{heading}: {outcome}" if heading else outcome
    ax.set_title(f"{first}\n{checks}", fontsize="small")
    ax.grid(True, alpha=0.3)
    legend_below(fig, ax)
    return fig


def snia_convergence(
    verdict: SniaVerdict, *, quantity: str = "tracked variable", unit: str = "IOPS"
) -> Figure:
    """The tracked variable per round with the measurement window shaded; the verdict as title."""
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    rounds = np.arange(1, verdict.rounds + 1)
    ax.plot(rounds, verdict.values, marker="o", color=_DATA, label=quantity)
    ax.axvspan(
        verdict.window_first - 0.5,
        verdict.window_last + 0.5,
        color=_FIT,
        alpha=0.15,
        label=f"measurement window (rounds {verdict.window_first}–{verdict.window_last})",
    )
    ax.set_xlim(0.5, verdict.rounds + 0.5)
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    value_axis(ax.yaxis, quantity, unit)
    return _finish(fig, ax, verdict.summary(_window_figures(verdict, unit)[0]), "SNIA convergence")


def snia_window(
    verdict: SniaVerdict, *, quantity: str = "tracked variable", unit: str = "IOPS"
) -> Figure:
    """SNIA's steady-state measurement window plot.

    The window's values, their mean, the allowed range as a band of mean ± half the
    range limit (20 % range: mean ± 10 %), and the least-squares line.
    """
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    rounds = np.arange(verdict.window_first, verdict.window_last + 1)
    mean = verdict.mean
    half_pct = verdict.range_limit_pct / 2
    ax.plot(rounds, verdict.window_values, marker="o", color=_DATA, label=quantity)
    mean_text, slope_text = _window_figures(verdict, unit)
    ax.axhline(mean, color=_MEAN, label=f"mean {mean_text}")
    ax.axhspan(
        mean * (1 - half_pct / 100),
        mean * (1 + half_pct / 100),
        color=_MEAN,
        alpha=0.12,
        label=f"mean ± {half_pct:g} % (range limit {verdict.range_limit_pct:g} %)",
    )
    ax.plot(
        rounds,
        verdict.slope * rounds + verdict.intercept,
        linestyle="--",
        color=_FIT,
        label=f"least-squares line, slope {slope_text}",
    )
    ax.set_xticks(rounds)
    ax.set_xlabel("round")
    value_axis(ax.yaxis, quantity, unit)
    return _finish(fig, ax, verdict.summary(mean_text), "SNIA measurement window")


def _window_figures(verdict: SniaVerdict, unit: str) -> tuple[str, str]:
    """The window's mean and slope as the legend writes them: a latency in µs in the
    unit of its mean, as the axis and the tables write it (2.34 s, -0.1515 s/round)."""
    mean = latency(verdict.mean) if unit == "µs" else f"{significant(verdict.mean, 6)} {unit}"
    return mean, rate(verdict.slope, unit, verdict.mean, "round")


def fio_steadystate(state: FioSteadyState) -> Figure:
    """fio's per-second samples of the tracked metric over its steady-state window.

    Slope criteria add fio's least-squares line (its own slope through the samples'
    centre); deviation criteria add the allowed band around the mean.
    """
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    if state.metric == "iops":
        ys, unit, scale, quantity = np.array(state.iops, dtype=float), "IOPS", 1.0, "I/O rate"
    else:
        ys, unit, scale, quantity = np.array(state.bw_mib_s), "MiB/s", 2.0**-20, "bandwidth"
    seconds = np.arange(len(ys))
    mean = float(ys.mean())
    ax.plot(seconds, ys, marker="o", color=_DATA, label=f"{quantity}, one sample a second")
    ax.axhline(mean, color=_MEAN, label=f"mean {mean:,.1f} {unit}")
    pct = " %" if state.percent else f" {unit}"
    if state.is_slope:
        fit = mean + state.slope * scale * (seconds - seconds.mean())
        ax.plot(
            seconds,
            fit,
            linestyle="--",
            color=_FIT,
            label=f"fio's slope {significant(state.slope * scale, 4, sign=True)} {unit}/s"
            f" (limit ±{state.limit:g}{pct})",
        )
    else:
        half = mean * state.limit / 100 if state.percent else state.limit * scale
        ax.axhspan(
            mean - half, mean + half, color=_MEAN, alpha=0.12, label=f"mean ± {state.limit:g}{pct}"
        )
    ax.set_xticks(seconds)
    ax.set_xlabel("time in the steady-state window (s)")
    value_axis(ax.yaxis, quantity, unit)
    return _finish(fig, ax, state.summary())


def save_charts(
    verdict: FioSteadyState | SniaVerdict, folder: Path, quantity: str, unit: str
) -> tuple[str, ...]:
    """A steady-state verdict's graphs saved in *folder* (PNG and SVG): the PNG paths.

    fio's own detection: its per-second samples; SNIA rounds: convergence and window.
    """
    if isinstance(verdict, FioSteadyState):
        figs = {"steady-state convergence": fio_steadystate(verdict)}
    else:
        axes = {"quantity": quantity, "unit": unit}
        figs = {
            "steady-state convergence": snia_convergence(verdict, **axes),
            "steady-state window": snia_window(verdict, **axes),
        }
    return tuple(str(render(fig).save(folder, title)) for title, fig in figs.items())
