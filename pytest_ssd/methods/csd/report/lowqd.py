"""Low-QD performance by read share across drives (METHOD §4.4): curves, weighted curves, ranking.

Each point of the matrix is one test (``test_low_qd[seq-cssd1-qd2-r70]``) that
derives a ``lowqd-point`` record with every repetition; the matrix of a pattern
and round is put together here from those records, so the curves per QD, the
weighted curves and their means are computed, not copied.  A point that did not
run (``-k``, a failure) is a gap in the curves, never interpolated, and a drive
with a gap in the weighted QDs is drawn but not ranked.  Only drives measured
at the same read shares, QDs and amounts rank together: a mean over 3 read
shares is not a mean over 11.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

from pytest_ssd.db import DriveResults
from pytest_ssd.errors import ParseError
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.methods.csd.analysis.lowqd import POINT_AXES, POINT_RECORD, RatioMatrix, ranking
from pytest_ssd.methods.csd.figures.lowqd import ranking_bars, ratio_curves, weighted_curves
from pytest_ssd.methods.csd.report.common import CSD, Drives, Part, state_of
from pytest_ssd.report.sections.base import row, table

MODULE = f"{CSD}test_lowqd.py::"
PATTERN_ORDER = ("seq", "rnd")


def _points(drive: DriveResults) -> Iterator[dict[str, Any]]:
    for record in drive.derived:
        if record.name == POINT_RECORD and record.test.startswith(MODULE):
            yield record.values


def groups(drive: DriveResults) -> dict[str, list[dict[str, Any]]]:
    """The drive's point records by matrix: ``cssd-1-seq`` -> the points, in the order run."""
    found: dict[str, list[dict[str, Any]]] = {}
    for values in _points(drive):
        found.setdefault(f"cssd-{values.get('round')}-{values.get('pattern')}", []).append(values)
    return found


def _order(key: str) -> tuple[str, int]:
    head, _, pattern = key.rpartition("-")
    return head, PATTERN_ORDER.index(pattern) if pattern in PATTERN_ORDER else len(PATTERN_ORDER)


def _differs(first: dict[str, Any], other: dict[str, Any]) -> str | None:
    diff = [
        f"{k} {other.get(k)} vs {first.get(k)}" for k in POINT_AXES if other.get(k) != first.get(k)
    ]
    return f"the matrix differs ({', '.join(diff)})" if diff else None


def _title(matrix: RatioMatrix, key: str) -> str:
    return f"{matrix.pattern.upper()} {format_bytes(matrix.block_size)}, {state_of(key)}"


def _gaps(matrix: RatioMatrix) -> str:
    return f"{matrix.missing} of {matrix.cells} points not measured"


def _matrices(
    drives: Drives, found: dict[int, dict[str, list[dict[str, Any]]]], key: str, part: Part
) -> dict[str, RatioMatrix]:
    """The drives' matrices of *key* that compare with the first one's; notes for the rest."""
    what = f"low QD in {state_of(key)} ({key.rpartition('-')[2]})"
    first: dict[str, Any] | None = None
    matrices: dict[str, RatioMatrix] = {}
    for drive in drives.all:
        name = drives.name(drive)
        points = found[id(drive)].get(key, [])
        if not points:
            part.left_out.append(f"{name}: left out of {what}: test_low_qd did not run")
            continue
        reason = _differs(first, points[0]) if first is not None else None
        try:
            matrix = RatioMatrix.from_points(points) if reason is None else None
        except ParseError as exc:
            reason = str(exc)
        if reason or matrix is None:
            part.left_out.append(f"{name}: left out of {what}: {reason}")
            continue
        first = first or points[0]
        matrices[name] = matrix
        if matrix.missing:
            part.left_out.append(f"{name}: {what}: {_gaps(matrix)} (gaps in the curves)")
    return matrices


def low_qd(drives: Drives) -> Part | None:
    """Per pattern and round: each drive's curves, every drive's weighted curve, the ranking."""
    found = {id(drive): groups(drive) for drive in drives.all}
    keys = sorted({key for by_key in found.values() for key in by_key}, key=_order)
    if not keys:
        return None
    part = Part("Low-QD performance by read share")
    titles: list[str] = []
    scores: dict[str, dict[str, float]] = {}  # drive -> title -> score
    for key in keys:
        matrices = _matrices(drives, found, key, part)
        if not matrices:
            continue
        title = _title(next(iter(matrices.values())), key)
        titles.append(title)
        shown = [
            drives.figure(ratio_curves(matrix, name), f"csd low QD {name} {key}")
            for name, matrix in matrices.items()
        ]
        fig = weighted_curves(matrices, drives.colours)
        shown.append(drives.figure(fig, f"csd low QD weighted {key}"))
        ranked = {name: m.score() for name, m in matrices.items() if m.weighted_complete()}
        for name, matrix in matrices.items():
            if name not in ranked:
                part.left_out.append(
                    f"{name}: not ranked in {title}: the weighted curve misses points"
                    f" ({_gaps(matrix)})"
                )
        if ranked:
            fig = ranking_bars(ranked, f"{title}: mean of the weighted curve", drives.colours)
            shown.append(drives.figure(fig, f"csd low QD ranking {key}"))
        part.body.append(f"<h4>{html.escape(title)}</h4>" + row(*shown))
        for name, score in ranked.items():
            scores.setdefault(name, {})[title] = score
    if scores:
        part.body.append(_ranking_table(titles, scores))
    return part


def _ranking_table(titles: list[str], scores: dict[str, dict[str, float]]) -> str:
    """Score (MiB/s) and place of every drive in every ranking."""
    places = {
        title: {
            r.device: r.place
            for r in ranking({n: s[title] for n, s in scores.items() if title in s})
        }
        for title in titles
    }
    rows = [
        [
            html.escape(name),
            *(f"{found[t]:,.1f} ({places[t][name]}.)" if t in found else "–" for t in titles),
        ]
        for name, found in scores.items()
    ]
    return table(["drive", *(html.escape(f"{t}: MiB/s (place)") for t in titles)], rows)
