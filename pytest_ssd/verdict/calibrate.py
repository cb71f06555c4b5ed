"""A build compared with itself: how a host's noise judges, and the bands it needs.

A run with ``--ssd-repeat=2N`` took each point's repeats one after another; its odd
repeats and its even repeats are two sides measured alternately (A B A B ...), as
Pinpoint interleaves two builds on one device: a drift of the host falls on both
sides alike.  Judged against each other with the gate's own statistics, every line of
an unchanged drive should be "same"; the shares of "same", "unknown" and of the false
claims ("regressed", "improved") say whether the host and the repeats can carry a gate,
and the unknowns' repeats say how many a side would.

Interleaving cannot see what moves a whole run: two runs of one build one after the
other differed here by 15 % (a loop device's random reads, 254,000 against 294,000 IOPS,
each run's repeats within 1 %, the machine equally busy), which the repeats of one run
cannot show.  Two runs of one unchanged build, judged as the gate judges them
(:func:`bands_needed`), give the bands of "same" that host needs: the lab puts them in
the datasheet's ``[baseline]`` (or ``--tolerance``), and its gate calls no such shift.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pytest_ssd.db import ResultsDb
from pytest_ssd.errors import DatabaseError
from pytest_ssd.verdict.judge import VERDICTS, MetricVerdict
from pytest_ssd.verdict.reference import Points, judge_points, runs_of, states_of
from pytest_ssd.verdict.summary import Judged
from pytest_ssd.verdict.tolerance import Tolerances

#: what the calibration calls each half
SIDES = ("odd repeats", "even repeats")
#: a false claim: an unchanged drive judged changed
CLAIMS = ("regressed", "improved")


def halves(points: Points) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Each point's repeats split as taken: the 1st, 3rd, ... and the 2nd, 4th, ..."""
    odd = {key: list(runs[0::2]) for key, runs in points.items()}
    even = {key: list(runs[1::2]) for key, runs in points.items()}
    return odd, even


def calibrate_run(
    db: ResultsDb, ref: str, tolerances: Tolerances | None = None
) -> list[tuple[Judged, MetricVerdict]]:
    """(drive, verdict) of every point of the run *ref*: its even repeats against its odd."""
    drives = db.resolve([ref])
    if not drives:
        raise DatabaseError(f"{db.path}: {ref!r} measured nothing to calibrate")
    found: list[tuple[Judged, MetricVerdict]] = []
    for drive in drives:
        measured = db.results(drive, series=False).measurements
        odd, even = halves(runs_of(measured, drive.dut_id))
        states = states_of(measured, drive.dut_id)
        judged = Judged(drive.name)
        found += [(judged, v) for v in judge_points(odd, even, tolerances, states)]
    return found


def shares(verdicts: Sequence[MetricVerdict]) -> str:
    """``regressed 0 %, improved 0 %, same 86 %, unknown 14 % of 28 lines``."""
    counts = Counter(v.verdict for v in verdicts)
    total = max(len(verdicts), 1)
    parts = [f"{word} {counts[word] / total:.0%}".replace("%", " %") for word in VERDICTS]
    return f"{', '.join(parts)} of {len(verdicts)} lines"


def bands_needed(verdicts: Sequence[MetricVerdict]) -> dict[str, tuple[float, float]]:
    """Per metric, from two runs of one unchanged build: the band (a fraction) from which no
    line would have been claimed (its interval's near end), and the band from which every
    line would have been "same" (its far end)."""
    found: dict[str, tuple[float, float]] = {}
    for v in verdicts:
        if v.low is None or v.high is None:
            continue
        # claimed when the whole interval lies beyond the band: high < 1 / (1 + t) or low > 1 + t
        near = max(1 / v.high - 1, v.low - 1, 0.0)
        far = max(v.high - 1, 1 / v.low - 1)
        was = found.get(v.metric, (0.0, 0.0))
        found[v.metric] = (max(was[0], near), max(was[1], far))
    return found
