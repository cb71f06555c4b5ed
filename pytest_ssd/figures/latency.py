"""Percentile and tail latency of QD1 workloads: distribution, nines plot and table (METHOD §4.5).

A workload's sample is fio's completion-latency histogram (``json+`` bins) with
all its directions merged: the 70 % read workload is judged on all its I/Os,
as seed 000's table does.  Percentiles are read off the histogram exactly as
fio does (:func:`pytest_ssd.fio.results.percentiles_from_bins`); one the sample
cannot resolve (fewer than 1 / (1 − p) I/Os) is shown as "n/r".

Across drives (:func:`tail_curves`) each drive's tail is a :class:`TailCurve`:
its histogram when the results kept one (the ``.clat-<direction>`` series),
else only fio's own percentiles, drawn as markers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from pytest_ssd.errors import ParseError
from pytest_ssd.figures import NINES, PALETTE, latency_axis, nines_x, thousands
from pytest_ssd.fio.results import JobResult, Percentile, percentiles_from_bins
from pytest_ssd.text import latency

#: the table's rows: one nine to five nines (seed 000)
TABLE_NINES = (90.0, 99.0, 99.9, 99.99, 99.999)
NOT_RESOLVED = "n/r"
#: the tail plot starts here
TAIL_FROM = 90.0


@dataclass(frozen=True, eq=False)
class LatencySample:
    """One workload's completion latencies: histogram buckets (ns, ascending) and their counts."""

    label: str
    iops: float
    values_ns: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]

    @classmethod
    def of(cls, label: str, result: JobResult) -> LatencySample:
        """All directions of a fio job merged; IOPS is the sum over directions.

        Raises :class:`ParseError` when a direction has no bins (fio ran without ``json+``).
        """
        pairs: list[tuple[int, int]] = []
        for name, direction in sorted(result.directions.items()):
            if direction.clat is None or not direction.clat.bins:
                raise ParseError(f"fio job {result.name} {name}: no clat bins (needs json+)")
            pairs.extend(direction.clat.bins)
        if not pairs:
            raise ParseError(f"fio job {result.name} did no I/O: no latency sample")
        iops = sum(d.iops for d in result.directions.values())
        return cls.of_bins(label, iops, pairs)

    @classmethod
    def of_bins(cls, label: str, iops: float, pairs: Iterable[tuple[int, int]]) -> LatencySample:
        """A sample of ``(ns, count)`` pairs, from any number of histograms (merged)."""
        raw = np.array(list(pairs), dtype=np.int64).reshape(-1, 2)
        if not len(raw) or raw[:, 1].sum() <= 0:
            raise ParseError(f"{label}: no latency sample")
        values, inverse = np.unique(raw[:, 0], return_inverse=True)
        counts = np.zeros(len(values), dtype=np.int64)
        np.add.at(counts, inverse, raw[:, 1])
        return cls(label, iops, values, counts)

    @property
    def total(self) -> int:
        """I/Os in the sample."""
        return int(self.counts.sum())

    def percentiles(self, ps: Sequence[float]) -> tuple[Percentile, ...]:
        """Percentiles *ps* with fio's rule, each marked resolved or not."""
        bins = list(zip(self.values_ns.tolist(), self.counts.tolist(), strict=True))
        return percentiles_from_bins(bins, ps)

    def cdf(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(latency µs, % of I/Os at or below it) per bucket: the distribution's steps."""
        share = np.cumsum(self.counts) * 100.0 / self.total
        return self.values_ns / 1000.0, share


def format_latency(p: Percentile) -> str:
    """'43.6 µs', '1.23 ms' (as the tables write a latency), or 'n/r' when the sample cannot
    resolve the percentile."""
    return latency(p.ns / 1000) if p.resolved else NOT_RESOLVED


@dataclass(frozen=True)
class TailTable:
    """Percentiles per workload: ``cells[w][i]`` is workload w's percentile ``nines[i]``."""

    nines: tuple[float, ...]
    columns: tuple[str, ...]
    cells: tuple[tuple[Percentile, ...], ...]

    def rows(self) -> list[list[str]]:
        """The table as text, header first: ``[["Percentile", "RND read", ...], ["90%", ...]]``."""
        table = [["Percentile", *self.columns]]
        for i, p in enumerate(self.nines):
            table.append([f"{p:g}%", *(format_latency(column[i]) for column in self.cells)])
        return table

    def values(self) -> dict[str, float | None]:
        """``{"RND read.p99.9_us": 38.75, ...}``, None where not resolved (for ``ssd.derive``)."""
        return {
            f"{name}.p{p.p:g}_us": p.ns / 1000 if p.resolved else None
            for name, column in zip(self.columns, self.cells, strict=True)
            for p in column
        }


def tail_table(samples: Sequence[LatencySample], nines: Sequence[float] = TABLE_NINES) -> TailTable:
    """The percentiles *nines* of every sample."""
    return TailTable(
        tuple(nines), tuple(s.label for s in samples), tuple(s.percentiles(nines) for s in samples)
    )


def _legend(label: str, iops: float) -> str:
    return f"{label} ({iops:,.0f} IOPS)"


def distribution(samples: Sequence[LatencySample], title: str) -> Figure:
    """The whole latency distribution: x = latency (µs, log), y = percentile of I/Os."""
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    for index, sample in enumerate(samples):
        xs, ys = sample.cdf()
        ax.step(
            np.concatenate(([xs[0]], xs)),
            np.concatenate(([0.0], ys)),
            where="post",
            color=PALETTE[index % len(PALETTE)],
            label=_legend(sample.label, sample.iops),
        )
    ax.set_xscale("log")
    thousands(ax.xaxis)
    ax.set_ylim(0, 100)
    latency_axis(ax.xaxis, "completion latency")
    ax.set_ylabel("percentile (%)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")  # slow and rare: no curve goes there
    return fig


@dataclass(frozen=True, eq=False)
class TailCurve:
    """One drive's (or workload's) tail: the sample's steps when known, and its table column."""

    label: str
    iops: float
    #: the table's percentiles of this sample
    column: tuple[Percentile, ...]
    #: the whole histogram; None when only fio's percentiles were kept
    sample: LatencySample | None = None

    @classmethod
    def of(cls, sample: LatencySample, nines: Sequence[float] = TABLE_NINES) -> TailCurve:
        return cls(sample.label, sample.iops, sample.percentiles(nines), sample)


def tail(samples: Sequence[LatencySample], table: TailTable, title: str) -> Figure:
    """The tail from 90 % on a nines axis (y = 1 / (1 − p)), and the table under it.

    The slowest I/O is drawn at 1 − 1/N, the highest percentile N I/Os resolve.
    The table's percentiles are marked: filled when resolved, hollow when not.
    """
    curves = [
        TailCurve(s.label, s.iops, column, s)
        for s, column in zip(samples, table.cells, strict=True)
    ]
    return tail_curves(curves, title, nines=table.nines)


def tail_curves(
    curves: Sequence[TailCurve],
    title: str,
    colours: Mapping[str, str] | None = None,
    *,
    nines: Sequence[float] = TABLE_NINES,
) -> Figure:
    """:func:`tail` of several drives (or workloads): *colours* by label, else the palette.

    A curve without a sample shows only its percentiles' markers.
    """
    fig = Figure(figsize=(6.4, 6.2), layout="constrained")
    ax, below = fig.subplots(2, 1, gridspec_kw={"height_ratios": (3, 1.3)})
    top = TAIL_FROM
    for index, curve in enumerate(curves):
        colour = (colours or {}).get(curve.label, PALETTE[index % len(PALETTE)])
        legend = _legend(curve.label, curve.iops)
        if curve.sample is not None:
            top = max(top, _tail_steps(ax, curve.sample, colour, legend))
            legend = ""
        for p in curve.column:
            ax.scatter(
                p.ns / 1000,
                nines_x(p.p),
                s=22,
                zorder=3,
                edgecolors=colour,
                facecolors=colour if p.resolved else "white",
                label=legend or None,
            )
            legend = ""
        top = max(top, *(p.p for p in curve.column))
    _nines_axis(ax, top)
    ax.set_xscale("log")
    thousands(ax.xaxis)
    latency_axis(ax.xaxis, "completion latency")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(
        fontsize="small",
        loc="lower right",
        title="hollow: not resolved by the sample",
        title_fontsize="x-small",
    )
    table = TailTable(tuple(nines), tuple(c.label for c in curves), tuple(c.column for c in curves))
    _table(below, table)
    return fig


def _tail_steps(ax: Axes, sample: LatencySample, colour: str, legend: str) -> float:
    """The sample's steps from 90 % up; the highest percentile it resolves."""
    xs, shares = sample.cdf()
    limit = 100.0 * (1 - 1 / sample.total)
    start = int(np.searchsorted(shares, TAIL_FROM))
    ys = [nines_x(min(share, limit)) for share in shares[start:]]
    ax.step(xs[start:], ys, where="post", color=colour, label=legend)
    return limit


def _nines_axis(ax: Axes, top: float) -> None:
    ax.set_yscale("log")
    ticks = [p for p in NINES if p <= top]
    ax.yaxis.set_major_locator(FixedLocator([nines_x(p) for p in ticks]))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{p:g}" for p in ticks])
    ax.set_ylim(nines_x(TAIL_FROM) * 0.9, nines_x(top) * 1.3)
    ax.set_ylabel("percentile (%)")


def _table(ax: Axes, table: TailTable) -> None:
    ax.set_axis_off()
    header, *body = table.rows()
    drawn = ax.table(cellText=body, colLabels=header, loc="center", cellLoc="center")
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(8)
    drawn.scale(1.0, 1.2)
