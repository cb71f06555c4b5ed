"""Graphs of low-QD performance by read/write ratio (METHOD §4.4, seed 000/001).

Throughput in MiB/s (the seed's unit outside the latency graphs) with IOPS on a
second axis; x is the read share.  Per drive: one curve per QD with the spread of
its repetitions, and the weighted curve.  Across drives: the weighted curves and
the ranking by their means.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pytest_ssd.figures import PALETTE, legend_below
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.methods.csd.analysis.lowqd import WEIGHTS, RatioMatrix, ranking


def _colour(index: int, device: str, colours: Mapping[str, str] | None) -> str:
    """The drive's colour when given, else the palette's by place."""
    return colours[device] if colours and device in colours else PALETTE[index % len(PALETTE)]


def weights_label() -> str:
    """'QD1 70 %, QD2 20 %, QD4 10 %'."""
    return ", ".join(f"QD{qd} {weight:.0%}".replace("%", " %") for qd, weight in WEIGHTS.items())


def _iops_axis(ax: Axes, iops_per_mib_s: float) -> None:
    def forward(mib_s: npt.ArrayLike) -> npt.ArrayLike:
        return np.multiply(mib_s, iops_per_mib_s)

    def inverse(iops: npt.ArrayLike) -> npt.ArrayLike:
        return np.divide(iops, iops_per_mib_s)

    ax.secondary_yaxis("right", functions=(forward, inverse)).set_ylabel("IOPS")


def _shares_axis(ax: Axes, shares: tuple[int, ...]) -> None:
    ax.set_xticks(list(shares))
    ax.set_xlim(min(shares) - 3, max(shares) + 3)
    ax.set_xlabel("read share (%)")
    ax.set_ylabel("MiB/s (read + write)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)


#: every low-QD figure of a matrix the same size: shown side by side, their tops and bottoms align
_SIZE = (6.4, 4.4)


def _title(matrix: RatioMatrix) -> str:
    return f"{matrix.pattern.upper()} {format_bytes(matrix.block_size)}"


def ratio_curves(matrix: RatioMatrix, device: str = "") -> Figure:
    """One curve per QD (trimmed means, band from the slowest to the fastest repetition)
    and the weighted curve, dashed, its mean in the legend."""
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    shares = np.array(matrix.read_shares)
    trimmed = matrix.trimmed
    for index, qd in enumerate(matrix.queue_depths):
        colour = PALETTE[index % len(PALETTE)]
        runs = matrix.samples[index]
        ax.fill_between(shares, runs.min(axis=1), runs.max(axis=1), color=colour, alpha=0.15)
        ax.plot(shares, trimmed[index], color=colour, marker="o", ms=4, label=f"QD{qd}")
    weighted = matrix.weighted()
    mean = (
        f"mean {weighted.mean():,.1f} MiB/s"
        if matrix.weighted_complete()
        else "no mean: points missing"
    )
    ax.plot(
        shares,
        weighted,
        color="black",
        linestyle="--",
        marker="s",
        ms=3,
        label=f"weighted ({weights_label()}): {mean}",
    )
    _shares_axis(ax, matrix.read_shares)
    _iops_axis(ax, matrix.iops_per_mib_s)
    repetitions = matrix.samples.shape[2]
    ax.set_title(
        f"{_title(matrix)} low QD by read share{f' — {device}' if device else ''}\n"
        f"mean of {repetitions} runs without the max and the min; band: all runs",
        fontsize="medium",
    )
    legend_below(fig, ax)  # the curves of a ratio plot fill its whole width
    return fig


def weighted_curves(
    matrices: Mapping[str, RatioMatrix], colours: Mapping[str, str] | None = None
) -> Figure:
    """The weighted curve of every drive, best score first in the legend.

    A curve with missing points (gaps, never interpolated) has no score: it comes
    last, "not ranked".  *colours* by drive (a report's palette); without, the
    palette by place.
    """
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    scores = {d: m.score() for d, m in matrices.items() if m.weighted_complete()}
    labels = {r.device: f"{r.place}. {r.device}: {r.score:,.1f} MiB/s" for r in ranking(scores)}
    for device in matrices:
        labels.setdefault(device, f"{device}: not ranked (points missing)")
    first = next(iter(matrices.values()))
    for index, device in enumerate(labels):
        matrix = matrices[device]
        ax.plot(
            matrix.read_shares,
            matrix.weighted(),
            color=_colour(index, device, colours),
            marker="o",
            ms=4,
            label=labels[device],
        )
    _shares_axis(ax, first.read_shares)
    _iops_axis(ax, first.iops_per_mib_s)
    ax.set_title(f"{_title(first)} weighted low-QD curve ({weights_label()})", fontsize="medium")
    legend_below(fig, ax)  # the curves of a ratio plot fill its whole width
    return fig


def ranking_bars(
    scores: Mapping[str, float], title: str, colours: Mapping[str, str] | None = None
) -> Figure:
    """Drives ranked by score (MiB/s), best on top; *colours* as in :func:`weighted_curves`."""
    ranked = ranking(scores)
    fig = Figure(figsize=(_SIZE[0], max(_SIZE[1], 0.9 + 0.4 * len(ranked))), layout="constrained")
    ax = fig.add_subplot()
    ys = np.arange(len(ranked))[::-1]
    bars = ax.barh(
        ys,
        [r.score for r in ranked],
        height=0.6,
        color=[_colour(i, r.device, colours) for i, r in enumerate(ranked)],
    )
    pad = max(0, 4 - len(ranked)) / 2  # few drives: slim bars, the space shared above and below
    ax.set_ylim(-0.5 - pad, len(ranked) - 0.5 + pad)
    ax.bar_label(bars, fmt="%.1f", fontsize="small", padding=2)
    ax.margins(x=0.12)  # the longest bar's value inside the axes
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r.place}. {r.device}" for r in ranked])
    ax.set_xlabel("mean of the weighted curve (MiB/s)")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    return fig
