"""Two drives side by side (seed 004, Table 2 and Figure 2): ratios and whether trends agree.

Shown when a report holds exactly two drive labels.  Per workload both drives
ran alike: IOPS, MB/s, p50 and p99 (means over ``--ssd-repeat`` runs), the ratio
of the second to the first, and per metric Spearman's rank correlation across
workloads: do the two drives rise and fall together even where their levels
differ (seed 004's emulator against a real SSD)?  Our reading of rho: >= 0.8 the
trends agree, >= 0.4 they partly agree, below they differ; fewer than 3 workloads,
or a drive whose figure does not vary, cannot be ranked.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pytest_ssd.report.sections.base import Context, Section, notes, table
from pytest_ssd.report.sections.match import Matched, match, measurement_keys
from pytest_ssd.report.sections.workloads import Bars, grouped_bars, value_of, workload_label
from pytest_ssd.text import latency, latency_unit

#: (metric key, column title, decimals)
METRICS = (
    ("iops", "IOPS", 0),
    ("bw_mb_s", "MB/s", 1),
    ("p50_us", "p50 latency", 1),
    ("p99_us", "p99 latency", 1),
)
AGREE, PARTLY = 0.8, 0.4


def _ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks 1..n, ties sharing their mean rank."""
    order = values.argsort(kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rho of paired values; None below 3 pairs or when one side is constant."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 3:
        return None
    rx, ry = _ranks(x), _ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def printed(rho: float) -> str:
    """Rho as the table prints it (two decimals)."""
    return f"{rho:.2f}"


def verdict(rho: float | None) -> str:
    """The words for *rho*, judged on the value as printed (0.7999999999999999 is 0.80)."""
    if rho is None:
        return "cannot be ranked (fewer than 3 workloads, or one drive does not vary)"
    rho = float(printed(rho))
    if rho >= AGREE:
        return "trends agree"
    return "trends partly agree" if rho >= PARTLY else "trends differ"


#: (workload label, direction, the first drive's measurement, the second's)
Pair = tuple[str, str, Matched, Matched]


def _pairs(ctx: Context, labels: Sequence[str]) -> tuple[list[Pair], list[str]]:
    """Workloads both drives ran alike (each drive's newest run), and what was left out."""
    drives = [next(d for d in ctx.drives if d.drive.label == label) for label in labels]
    pairs: list[Pair] = []
    left_out: list[str] = []
    for key in measurement_keys(drives, ""):
        found, missing = match(drives, key)
        left_out.extend(missing)
        if len(found) != 2:
            continue
        a, b = found
        for direction in sorted(set(a.measurement.metrics) & set(b.measurement.metrics)):
            pairs.append((workload_label(a.measurement, direction), direction, a, b))
    return pairs, left_out


def _metric(pairs: list[Pair], key: str, labels: Sequence[str]) -> tuple[Bars, float | None]:
    """One metric: the bars (value, sd) per workload and drive, and Spearman's rho."""
    bars: Bars = {}
    sides: tuple[list[float], list[float]] = ([], [])
    for label, direction, a, b in pairs:
        bars[label] = {}
        for side, drive, one in zip(sides, labels, (a, b), strict=True):
            value = value_of(one, direction, key)
            side.append(value[0])
            bars[label][drive] = value
    return bars, spearman(*sides)


def _row(pair: Pair) -> list[str]:
    label, direction, a, b = pair
    cells = [html.escape(label)]
    for key, _, digits in METRICS:
        va, vb = value_of(a, direction, key)[0], value_of(b, direction, key)[0]
        ratio = vb / va if np.isfinite(va) and np.isfinite(vb) and va else np.nan
        cells += [_fmt(va, key, digits), _fmt(vb, key, digits), _fmt(ratio, "", 2)]
    return cells


def section(ctx: Context) -> Section | None:
    """The pair section, or None unless the report holds exactly two drive labels."""
    labels = list(dict.fromkeys(d.drive.label for d in ctx.drives))
    if len(labels) != 2:
        return None
    pairs, left_out = _pairs(ctx, labels)
    if not pairs:
        return None
    panels, trends = [], []
    for key, title, _ in METRICS:
        bars, rho = _metric(pairs, key, labels)
        panels.append(_latency_panel(title, bars) if key.endswith("_us") else (title, bars))
        trends.append([html.escape(title), "—" if rho is None else printed(rho), verdict(rho)])
    names = [html.escape(label) for label in labels]
    header = ["workload"]
    for _, title, _ in METRICS:
        header += [f"{title} {names[0]}", f"{title} {names[1]}", f"{names[1]} / {names[0]}"]
    body = table(header, [_row(pair) for pair in pairs])
    body += table(["metric", "Spearman rho across workloads", "verdict"], trends)
    body += ctx.figures.html(grouped_bars(panels, ctx.palette), f"{labels[0]} vs {labels[1]}")
    title = f"Two-device comparison: {labels[0]} and {labels[1]}"
    return Section("ssd-pair", title, body + notes(left_out))


def _fmt(value: float, key: str, digits: int) -> str:
    """A cell: a latency (*key* in µs) in its unit (716.8 µs, 2.21 ms), else *digits* decimals."""
    if not np.isfinite(value):
        return "not resolved"
    return latency(value) if key.endswith("_us") else f"{value:,.{digits}f}"


def _latency_panel(title: str, bars: Bars) -> tuple[str, Bars]:
    """A latency panel's bars (µs) in the unit of its highest bar: ``p99 latency (ms)``."""
    heights = [mean for drives in bars.values() for mean, _ in drives.values()]
    finite = [h for h in heights if np.isfinite(h)]
    unit, scale, _ = latency_unit(max(finite, default=0.0))
    scaled = {
        label: {drive: (mean / scale, sd / scale) for drive, (mean, sd) in drives.items()}
        for label, drives in bars.items()
    }
    return f"{title} ({unit})", scaled
