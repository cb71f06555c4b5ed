"""Percentile and tail latency across drives (METHOD §4.5).

Per workload and round: every drive's tail on the nines axis and a table of
p90 … p99.999, "n/r" where the sample cannot resolve a percentile.  A drive's
tail comes from the completion-latency histograms its measurement kept (the
``<job>.clat-<direction>`` series, directions merged as the suite's own graph
does); without them, from fio's percentiles of a one-direction workload, drawn
as markers only.
"""

from __future__ import annotations

import html

from pytest_ssd.db import DriveResults
from pytest_ssd.errors import ParseError
from pytest_ssd.figures.latency import (
    TABLE_NINES,
    LatencySample,
    TailCurve,
    format_latency,
    tail_curves,
)
from pytest_ssd.fio.results import Percentile
from pytest_ssd.methods.csd.report.common import (
    Drives,
    Part,
    measurement_names,
    measurements_of,
    param_of,
    series,
    state_of,
)
from pytest_ssd.report.sections.base import table
from pytest_ssd.results.record import Measurement


def _has(drive: DriveResults, key: str) -> bool:
    return bool(measurements_of(drive, key))


def _from_histograms(
    drive: DriveResults, m: Measurement, name: str, iops: float
) -> TailCurve | None:
    """Every direction's histogram merged; None when one of them was not kept."""
    pairs: list[tuple[int, int]] = []
    for direction in sorted(m.metrics):
        found = series(drive, m.test, f"{m.name}.clat-{direction}")
        if found is None or not {"ns", "count"} <= set(found.arrays):
            return None
        pairs += zip(found.arrays["ns"].tolist(), found.arrays["count"].tolist(), strict=True)
    return TailCurve.of(LatencySample.of_bins(name, iops, pairs))


def _from_percentiles(m: Measurement, name: str, iops: float) -> TailCurve:
    """fio's own percentiles of a one-direction workload (no histogram to merge)."""
    if len(m.metrics) != 1:
        raise ParseError(f"{m.name}: no latency histogram to merge {' and '.join(m.metrics)}")
    (data,) = m.metrics.values()
    known = {float(q["p"]): q for q in (data.get("clat") or {}).get("percentiles", [])}
    missing = [p for p in TABLE_NINES if p not in known]
    if missing:
        raise ParseError(f"{m.name}: neither a latency histogram nor fio's p{missing[0]:g}")
    column = tuple(
        Percentile(p, round(known[p]["us"] * 1000), bool(known[p]["resolved"])) for p in TABLE_NINES
    )
    return TailCurve(name, iops, column)


def curve(drive: DriveResults, m: Measurement, name: str) -> tuple[TailCurve, str]:
    """The drive's tail of measurement *m* under legend *name*, and where it came from."""
    iops = sum(float(d.get("iops") or 0.0) for d in m.metrics.values())
    found = _from_histograms(drive, m, name, iops)
    if found is not None:
        return found, "histogram"
    return _from_percentiles(m, name, iops), "fio's percentiles"


def latency(drives: Drives) -> Part | None:
    """Per round and workload: the drives' tails on one nines axis, and the table."""
    keys = drives.tests_of("test_latency.py")
    if not keys:
        return None
    part = Part("Percentile and tail latency (QD1)")
    for key in keys:
        state = state_of(param_of(key))
        kept, left_out = drives.comparable(key, f"the latency in {state}", _has)
        part.left_out += left_out
        rows: list[list[str]] = []
        if kept:
            part.body.append(f"<h4>{html.escape(state)}</h4>")
        for _, name in measurement_names(kept, key):
            curves: list[TailCurve] = []
            label = name
            for drive in kept:
                m = drive.measurement(key, name)
                if m is None:
                    continue
                label = str(m.workload.get("label", name))
                try:
                    found, source = curve(drive, m, drives.name(drive))
                except ParseError as exc:
                    part.left_out.append(f"{drives.name(drive)}: left out of the tail: {exc}")
                    continue
                curves.append(found)
                rows.append(_row(label, found, source))
            if curves:
                fig = tail_curves(curves, f"Tail latency: {label}, {state}", drives.colours)
                part.body.append(drives.figure(fig, f"csd tail {name} {param_of(key)}"))
        if rows:
            header = ["workload", "drive", "IOPS", *(f"p{p:g}" for p in TABLE_NINES), "from"]
            part.body.append(table(header, rows))
    return part


def _row(label: str, found: TailCurve, source: str) -> list[str]:
    return [
        html.escape(label),
        html.escape(found.label),
        f"{found.iops:,.0f}",
        *(html.escape(format_latency(p)) for p in found.column),
        html.escape(source),
    ]
