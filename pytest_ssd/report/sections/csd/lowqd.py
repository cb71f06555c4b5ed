"""Low-QD performance by read share across drives (METHOD §4.4): weighted curves and ranking.

Each drive's matrix comes back from what the test derived (every repetition is
kept), so the weighted curves and their means are recomputed, not copied.  Only
drives measured at the same read shares and QDs rank together: a mean over 3
read shares is not a mean over 11.
"""

from __future__ import annotations

import html

from pytest_ssd.analysis.lowqd import RatioMatrix, ranking
from pytest_ssd.db import DriveResults
from pytest_ssd.errors import ParseError
from pytest_ssd.figures.lowqd import ranking_bars, weighted_curves
from pytest_ssd.fio.job import format_bytes
from pytest_ssd.report.sections.base import table
from pytest_ssd.report.sections.csd.common import Drives, Part, derived, param_of, state_of

#: what must agree for two drives' curves to rank together
_AXES = ("pattern", "block_size", "read_pct", "queue_depths")


def _record(drive: DriveResults, key: str) -> dict[str, object] | None:
    """The drive's ``lowqd-<pattern>`` values of test *key*."""
    for pattern in ("seq", "rnd"):
        found = derived(drive, key, f"lowqd-{pattern}")
        if found is not None:
            return found[1]
    return None


def _has(drive: DriveResults, key: str) -> bool:
    return _record(drive, key) is not None


def _alike(first: DriveResults, other: DriveResults, key: str) -> str | None:
    ref, mine = _record(first, key) or {}, _record(other, key) or {}
    diff = [f"{k} {mine.get(k)} vs {ref.get(k)}" for k in _AXES if mine.get(k) != ref.get(k)]
    return f"the matrix differs ({', '.join(diff)})" if diff else None


def _title(matrix: RatioMatrix, key: str) -> str:
    return f"{matrix.pattern.upper()} {format_bytes(matrix.block_size)}, {state_of(param_of(key))}"


def low_qd(drives: Drives) -> Part | None:
    """Per pattern and round: every drive's weighted curve, and the drives ranked by its mean."""
    keys = drives.tests_of("test_lowqd.py")
    if not keys:
        return None
    part = Part("Low-QD performance by read share")
    titles: list[str] = []
    scores: dict[str, dict[str, float]] = {}  # drive -> title -> score
    for key in keys:
        what = f"low QD in {state_of(param_of(key))} ({param_of(key).rpartition('-')[2]})"
        kept, left_out = drives.comparable(key, what, _has, _alike)
        part.left_out += left_out
        matrices: dict[str, RatioMatrix] = {}
        for drive in kept:
            try:
                matrices[drives.name(drive)] = RatioMatrix.from_dict(_record(drive, key) or {})
            except ParseError as exc:
                part.left_out.append(f"{drives.name(drive)}: left out of low QD: {exc}")
        if not matrices:
            continue
        title = _title(next(iter(matrices.values())), key)
        titles.append(title)
        fig = weighted_curves(matrices, drives.colours)
        part.body.append(drives.figure(fig, f"csd low QD weighted {param_of(key)}"))
        ranked = {name: m.score() for name, m in matrices.items()}
        fig = ranking_bars(ranked, f"{title}: mean of the weighted curve", drives.colours)
        part.body.append(drives.figure(fig, f"csd low QD ranking {param_of(key)}"))
        for name, score in ranked.items():
            scores.setdefault(name, {})[title] = score
    if titles:
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
