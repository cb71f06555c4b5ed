"""SNIA PTS graphs: per-round convergence of the tracked mix, and results by block size.

The tracked variable's own convergence and measurement-window graphs are
:func:`pytest_ssd.figures.steady.snia_convergence` and ``snia_window``; here are
the PTS's other pages: every block size of the tracked R/W mix per round (its
"steady-state convergence plot"), and the window's per-cell means as a 2-D plot,
one line per R/W mix against the block size (one block size: bars per mix).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

from pytest_ssd.figures import PALETTE, legend_below, thousands, value_axis, value_labels
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.methods.snia.workloads import mix_label
from pytest_ssd.steady.snia import SniaVerdict
from pytest_ssd.text import latency_unit

_SIZE = (6.4, 3.8)
#: the per-cell results each test draws by block size (the latency test: all three figures)
CELL_METRICS: dict[str, tuple[str, ...]] = {
    "iops": ("iops",),
    "bw_mib_s": ("bw_mib_s",),
    "clat_mean_us": ("clat_mean_us", "clat_p99999_us", "clat_max_us"),
}
#: per-cell result -> (words, unit)
CELL_UNITS = {
    "iops": ("IOPS", "IOPS"),
    "bw_mib_s": ("throughput", "MiB/s"),
    "clat_mean_us": ("mean completion latency (clat)", "µs"),
    "clat_p99999_us": ("p99.999 completion latency (clat)", "µs"),
    "clat_max_us": ("max completion latency (clat)", "µs"),
}


@dataclass(frozen=True, eq=False)
class CellTable:
    """One per-cell result of the window as a mixes x block sizes table (NaN: not resolved)."""

    metric: str
    mixes: tuple[int, ...]
    block_sizes: tuple[int, ...]
    values: npt.NDArray[np.float64]

    @classmethod
    def of(
        cls, meta: Mapping[str, Any], cells: Sequence[Mapping[str, Any]], metric: str
    ) -> CellTable:
        mixes, blocks = tuple(meta["mixes"]), tuple(meta["block_sizes"])
        values = np.full((len(mixes), len(blocks)), np.nan)
        for cell in cells:
            value = cell.get(metric)
            if value is not None:
                row, col = mixes.index(cell["read_pct"]), blocks.index(cell["block_size"])
                values[row, col] = float(value)
        return cls(metric, mixes, blocks, values)

    @property
    def resolved(self) -> bool:
        """Whether any cell has a value (a short window resolves no p99.999 at all)."""
        return bool(np.isfinite(self.values).any())

    @property
    def what(self) -> str:
        return CELL_UNITS[self.metric][0]

    @property
    def unit(self) -> str:
        return CELL_UNITS[self.metric][1]


def by_block_size(table: CellTable, title: str) -> Figure:
    """The PTS's 2-D plot: one line per R/W mix over the block sizes (log axes)."""
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    if len(table.block_sizes) == 1:
        labels = [mix_label(m) for m in table.mixes]
        unit, scale = table.unit, 1.0
        if unit == "µs" and table.resolved:  # bars' values scaled: their labels read too
            unit, scale, _ = latency_unit(float(np.nanmax(table.values)))
        drawn = ax.bar(labels, table.values[:, 0] / scale, color=PALETTE[: len(labels)])
        value_labels(ax, drawn)
        ax.set_xlabel(f"R/W mix, {format_bytes(table.block_sizes[0])}")
        ax.set_ylabel(f"{table.what} ({unit})")
    else:
        xs = np.array(table.block_sizes, dtype=float)
        for index, mix in enumerate(table.mixes):
            colour = PALETTE[index % len(PALETTE)]
            ax.plot(xs, table.values[index], marker="o", color=colour, label=mix_label(mix))
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(xs.tolist()))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([format_bytes(b) for b in table.block_sizes], fontsize="small")
        if table.resolved and np.nanmin(table.values) > 0:
            ax.set_yscale("log")
            thousands(ax.yaxis)
        ax.set_xlabel("block size")
        legend_below(fig, ax, columns=4)
        value_axis(ax.yaxis, table.what, table.unit)
    ax.set_title(title, fontsize="small")
    ax.grid(True, alpha=0.3, which="both")
    return fig


def tracked_mix_rounds(
    meta: Mapping[str, Any], values: npt.NDArray[np.float64], verdict: SniaVerdict
) -> Figure:
    """Every block size of the tracked cell's R/W mix per round, the measurement window shaded.

    *values* is rounds x cells of the tracked metric (the series' array).
    """
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    cells, tracked = list(meta["cells"]), int(meta["tracked"])
    mix = cells[tracked].split()[0]
    rounds = np.arange(1, len(values) + 1)
    same_mix = [i for i, label in enumerate(cells) if label.split()[0] == mix]
    for n, index in enumerate(same_mix):
        mark = " (tracked)" if index == tracked else ""
        ax.plot(
            rounds,
            values[:, index],
            marker="o",
            color=PALETTE[n % len(PALETTE)],
            label=cells[index] + mark,
            linewidth=2.5 if mark else 1.0,
        )
    ax.axvspan(
        verdict.window_first - 0.5,
        verdict.window_last + 0.5,
        color="grey",
        alpha=0.15,
        label=f"window (rounds {verdict.window_first}–{verdict.window_last})",
    )
    ax.set_xlim(0.5, len(values) + 0.5)
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    value_axis(ax.yaxis, CELL_UNITS[meta["metric"]][0], meta["unit"])
    ax.set_title(f"SNIA {meta['title']}: R/W mix {mix} per round", fontsize="small")
    ax.grid(True, alpha=0.3)
    legend_below(fig, ax, columns=3)
    return fig
