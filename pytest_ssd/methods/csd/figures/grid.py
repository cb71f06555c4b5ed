"""Results grids like CrystalDiskMark's, and MiB/s bar charts (sync writes).

A grid has one row per test and a Read and a Write column; a cell shows the
best pass in MB/s (CDM's unit, decimal) with MiB/s under it, and IOPS for RND
tests.  Each value box carries a faint bar scaled to the column's best.

Across drives (:func:`grid_bars`) the grids' cells become grouped bars, one
colour per drive: SEQ tests in MB/s, RND tests in IOPS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import StrMethodFormatter

from pytest_ssd.figures import MAX_WIDTH_PX, PALETTE, legend_below, value_text
from pytest_ssd.methods.csd.workloads.profiles import DIRECTIONS, CdmScore, CdmTest

#: column edges of a grid panel (label, read, write), in axes units
_COLUMNS = ((0.0, 0.3), (0.3, 0.65), (0.65, 1.0))
_LABEL_FILL, _VALUE_FILL, _METER_FILL = "#2f6b3a", "#f4f8f4", "#cfe6d2"
#: one grid's width, inches
_GRID_WIDTH = 4.4


@dataclass(frozen=True)
class Cell:
    """What a grid cell shows: one pass's MB/s, MiB/s and IOPS."""

    mb_s: float
    mib_s: float
    iops: float

    def text(self, with_iops: bool) -> str:
        lines = [f"{self.mb_s:,.2f} MB/s", f"{self.mib_s:,.2f} MiB/s"]
        if with_iops:
            lines.append(f"{self.iops:,.0f} IOPS")
        return "\n".join(lines)


@dataclass(frozen=True)
class Row:
    """One test: its label and its read and write cells (None when not measured)."""

    label: str
    rnd: bool
    read: Cell | None
    write: Cell | None

    @property
    def cells(self) -> tuple[Cell | None, Cell | None]:
        return self.read, self.write


@dataclass(frozen=True)
class Grid:
    """One CDM profile's results: 'Default', 'NVMe'."""

    title: str
    rows: tuple[Row, ...]

    def text(self) -> list[list[str]]:
        """The grid as text, header first: ``[["", "Read", "Write"], ["SEQ1M Q8T1", ...], ...]``."""
        table = [["", "Read", "Write"]]
        for row in self.rows:
            table.append([row.label, *(c.text(row.rnd) if c else "–" for c in row.cells)])
        return table


def grid_of(title: str, tests: Sequence[CdmTest], scores: Sequence[CdmScore]) -> Grid:
    """A grid of *tests* in their order, each cell the best pass of its score."""
    best = {(s.test, s.direction): s for s in scores}
    rows = []
    for test in tests:
        cells = [_best_cell(best.get((test, direction))) for direction in DIRECTIONS]
        rows.append(Row(test.label, test.pattern == "rnd", *cells))
    return Grid(title, tuple(rows))


def _best_cell(score: CdmScore | None) -> Cell | None:
    if score is None:
        return None
    i = score.best
    return Cell(score.mb_s[i], score.mib_s[i], score.iops[i])


def grid_of_values(title: str, tests: Sequence[CdmTest], values: Mapping[str, Any]) -> Grid:
    """A grid from what the quick-profile test derived (:meth:`CdmScore.as_values`)."""
    rows = []
    for test in tests:
        cells = [_cell_of(values, f"{test.key}.{direction}") for direction in DIRECTIONS]
        rows.append(Row(test.label, test.pattern == "rnd", *cells))
    return Grid(title, tuple(rows))


def _cell_of(values: Mapping[str, Any], stem: str) -> Cell | None:
    found = [values.get(f"{stem}.{unit}") for unit in ("mb_s", "mib_s", "iops")]
    numbers = [float(value) for value in found if value is not None]
    return Cell(*numbers) if len(numbers) == len(found) else None


def results_grid(grids: Sequence[Grid], title: str) -> Figure:
    """The grids side by side, CDM style, under *title* (the device state, say)."""
    height = max((len(g.rows) for g in grids), default=0) + 1
    # as many grids a row as fit the report's width, the rest below
    columns = max(1, min(len(grids), int(MAX_WIDTH_PX / 100 // _GRID_WIDTH)))
    rows = -(-len(grids) // columns)
    fig = Figure(
        figsize=(_GRID_WIDTH * columns, (0.62 * height + 0.5) * rows + 0.3), layout="constrained"
    )
    for index, grid in enumerate(grids, start=1):
        _draw(fig.add_subplot(rows, columns, index), grid)
    fig.suptitle(title)
    return fig


def _draw(ax: Axes, grid: Grid) -> None:
    text = grid.text()
    ax.set_xlim(0, 1)
    ax.set_ylim(len(text), 0)
    ax.set_axis_off()
    ax.set_title(grid.title, fontsize="medium")
    peaks = [max((c.mb_s for r in grid.rows if (c := r.cells[i])), default=0.0) for i in (0, 1)]
    for y, line in enumerate(text):
        for x, ((left, right), words) in enumerate(zip(_COLUMNS, line, strict=True)):
            label = y == 0 or x == 0
            fill = _LABEL_FILL if label else _VALUE_FILL
            _box(ax, left, right - left, y + 0.04, 0.92, colour=fill)
            cell = None if label else grid.rows[y - 1].cells[x - 1]
            if cell is not None and peaks[x - 1] > 0:
                meter = (right - left) * cell.mb_s / peaks[x - 1]
                _box(ax, left, meter, y + 0.8, 0.16, colour=_METER_FILL)
            ax.text(
                (left + right) / 2,
                y + 0.46,
                words,
                ha="center",
                va="center",
                fontsize="x-small",
                color="white" if label else "black",
            )


def _box(ax: Axes, left: float, width: float, top: float, height: float, *, colour: str) -> None:
    """A box inside a grid cell, a small gap left and right."""
    ax.add_patch(Rectangle((left + 0.005, top), max(width - 0.01, 0.0), height, facecolor=colour))


def grid_bars(
    grids: Mapping[str, Sequence[Grid]], colours: Mapping[str, str], title: str
) -> Figure:
    """Several drives' grids (by drive label) as grouped bars, one colour per drive.

    One row of panels per grid title ('Default', 'NVMe'): SEQ tests in MB/s (CDM's
    decimal unit), RND tests in IOPS; every bar labelled with its value.
    """
    titles = list(dict.fromkeys(g.title for found in grids.values() for g in found))
    fig = Figure(figsize=(11.0, 0.8 + 3.0 * max(len(titles), 1)), layout="constrained")
    for row, grid_title in enumerate(titles):
        per_drive = {
            label: next((g for g in found if g.title == grid_title), None)
            for label, found in grids.items()
        }
        for column, rnd in enumerate((False, True)):
            ax = fig.add_subplot(len(titles), 2, 2 * row + column + 1)
            _grouped(ax, per_drive, colours, rnd)
            pattern, unit = ("RND", "IOPS") if rnd else ("SEQ", "MB/s")
            ax.set_title(f"{grid_title}: {pattern} in {unit}", fontsize="small")
            ax.set_ylabel("IOPS" if rnd else "MB/s (10⁶ bytes/s)")
            ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))  # 100,000 IOPS
    legend_below(fig, *fig.axes, columns=len(grids))
    fig.suptitle(title)
    return fig


def _short(value: float) -> str:
    """A bar label that fits a narrow bar: 1,448 · 76.6k · 0.82."""
    return f"{value / 1000:,.1f}k" if value >= 10_000 else value_text(value)


def _grouped(
    ax: Axes, grids: Mapping[str, Grid | None], colours: Mapping[str, str], rnd: bool
) -> None:
    """Bars of one pattern's cells: a group per test and direction, a bar per drive."""
    first = next((g for g in grids.values() if g is not None), None)
    rows = [r for r in first.rows if r.rnd == rnd] if first else []
    groups = [(r.label, i) for r in rows for i, _ in enumerate(DIRECTIONS)]
    width = 0.8 / max(len(grids), 1)
    for index, (label, grid) in enumerate(grids.items()):
        cells = {r.label: r.cells for r in grid.rows} if grid else {}
        found = [cells.get(name, (None, None))[i] for name, i in groups]
        heights = [np.nan if c is None else (c.iops if rnd else c.mb_s) for c in found]
        xs = np.arange(len(groups)) + (index - (len(grids) - 1) / 2) * width
        drawn = ax.bar(xs, heights, width, color=colours[label], label=label)
        texts = ["–" if c is None else _short(c.iops if rnd else c.mb_s) for c in found]
        # up to two drives: upright labels; more: turned, their bars are too narrow
        turn = 90 if len(grids) > 2 else 0
        ax.bar_label(drawn, labels=texts, fontsize="x-small", rotation=turn, padding=2)
    ax.set_xticks(np.arange(len(groups)))
    ax.set_xticklabels([f"{name}\n{DIRECTIONS[i]}" for name, i in groups], fontsize="x-small")
    ax.margins(y=0.35)  # room for the value labels
    ax.grid(True, axis="y", alpha=0.3)


@dataclass(frozen=True)
class Bar:
    """One bar: a workload group ('SEQ 128KiB QD1 sync'), what it is (a device) and MiB/s."""

    group: str
    label: str
    mib_s: float
    #: the drive's colour in a comparison; the first palette colour otherwise
    colour: str | None = None


def mib_bars(bars: Sequence[Bar], title: str) -> Figure:
    """Horizontal MiB/s bars, one panel per group, fastest on top (seed 000's bar charts)."""
    groups = list(dict.fromkeys(bar.group for bar in bars))
    most = max((sum(1 for b in bars if b.group == g) for g in groups), default=1)
    fig = Figure(figsize=(6.4, 0.9 + len(groups) * (0.5 + 0.32 * most)), layout="constrained")
    for index, group in enumerate(groups, start=1):
        ax = fig.add_subplot(len(groups), 1, index)
        chosen = sorted((b for b in bars if b.group == group), key=lambda b: b.mib_s)
        colours = [b.colour or PALETTE[0] for b in chosen]
        drawn = ax.barh([b.label for b in chosen], [b.mib_s for b in chosen], color=colours)
        ax.bar_label(drawn, labels=[f"{b.mib_s:,.2f}" for b in chosen], fontsize="small", padding=2)
        ax.set_title(group, fontsize="small")
        ax.set_xlabel("MiB/s")
        ax.set_xlim(0, max(b.mib_s for b in chosen) * 1.2 or 1.0)
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(title)
    return fig
