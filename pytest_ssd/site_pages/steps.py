"""Step changes in a trace: found by a step fit, kept only when the verdicts call them.

The fit is binary segmentation of the builds' median log values: a split is kept when it
removes more squared error than :data:`PENALTY` times log(builds) times the noise's
variance (a BIC-like penalty), the noise being the larger of the builds' own scatter (from
their consecutive differences, robust to the steps themselves) and a median's scatter
from its repeats: it proposes where the level moves.  Each proposed step is then judged
like ``pytest-ssd compare`` judges two builds (:func:`pytest_ssd.verdict.judge.judge`, the
build before against the build at the step, on their repeats), in a band at least
:data:`BAND` times the builds' own scatter wide; a step that judgement does not call is
judged again on up to :data:`SIDE` builds a side within the fit's segments, each build's
median one sample, once there are :data:`SIDE_AT_LEAST` (a step within one build's noise
shows in several).  Only a step the verdicts call regressed or improved is an alert, so
noise within the band raises none.  Why these (tests/benchmarks/changepoints.py): see
docs/site.md, "Why this chart and this change-point method".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_ssd.site_pages.data import SiteSeries, Trace
from pytest_ssd.verdict.judge import MetricVerdict, default_tolerance, judge
from pytest_ssd.verdict.tolerance import DERIVED

#: a split must remove this many times log(builds + 1) the noise's variance to be proposed
PENALTY = 3.0
#: the within-build spread assumed at least (1 % in log terms): repeats that agree exactly
#: would otherwise make every build-to-build wobble a step
SPREAD_FLOOR = 0.01
#: the band a step is judged in is at least this many times the builds' own scatter: two
#: builds of a series whose builds scatter more than a run's repeats do differ more than
#: their repeats say, without any change
BAND = 3.0
#: where such a band came from, as a verdict names it
SCATTER = "derived from the builds' scatter"
#: the verdicts that make an alert
ALERTING = ("regressed", "improved")
#: a step the build before and the build at it do not decide is judged on up to this many
#: builds a side, within the fit's segments (each build's median one sample, in the band
#: their own spread derives) ...
SIDE = 10
#: ... once this many builds on each side show it: a level that lasts (builds run while
#: the host stalled come in shorter runs: recorded noise here had pairs 9 to 100 times off)
SIDE_AT_LEAST = 4


def change_points(levels: Sequence[Sequence[float]], penalty: float = PENALTY) -> list[int]:
    """The indexes of the builds where a step starts (1 ..), by binary segmentation of the
    builds' median log values."""
    if len(levels) < 2 or any(not v or min(v) <= 0 for v in levels):
        return []
    medians = np.log(np.array([float(np.median(v)) for v in levels]))
    noise = max(_build_noise(medians), _repeat_noise(levels), SPREAD_FLOOR)
    threshold = penalty * math.log(len(medians) + 1) * noise**2
    found: list[int] = []
    _split(medians, 0, len(medians), threshold, found)
    return sorted(found)


def _build_noise(medians: np.ndarray) -> float:
    """The builds' own scatter: from the median of consecutive differences (robust to steps,
    the estimate change-point methods use): 1.4826 MAD of the differences over sqrt 2."""
    if len(medians) < 3:
        return 0.0
    steps = np.abs(np.diff(medians))
    return float(1.4826 * np.median(steps) / math.sqrt(2))


def _repeat_noise(levels: Sequence[Sequence[float]]) -> float:
    """The scatter of a build's median from its repeats (pooled within-build spread)."""
    logs = [np.log(np.asarray(v, dtype=float)) for v in levels if len(v) > 1]
    if not logs:
        return 0.0
    pooled = sum(float(np.var(v, ddof=1)) * (len(v) - 1) for v in logs)
    dof = sum(len(v) - 1 for v in logs)
    return math.sqrt(pooled / dof / statistics.fmean(len(v) for v in logs))


def _sse(values: np.ndarray) -> float:
    return float(((values - values.mean()) ** 2).sum())


def _split(medians: np.ndarray, start: int, end: int, threshold: float, found: list[int]) -> None:
    if end - start < 2:
        return
    whole = _sse(medians[start:end])
    gains = {
        s: whole - _sse(medians[start:s]) - _sse(medians[s:end]) for s in range(start + 1, end)
    }
    best = max(gains, key=lambda s: gains[s])
    if gains[best] <= threshold:
        return
    found.append(best)
    _split(medians, start, best, threshold, found)
    _split(medians, best, end, threshold, found)


@dataclass(frozen=True)
class Alert:
    """A step the verdicts call: a series' trace, the builds on each side, the verdict."""

    series: str
    what: str
    trace: Trace
    at: int
    verdict: MetricVerdict

    @property
    def build(self) -> str:
        return self.trace.points[self.at].build

    @property
    def before(self) -> str:
        return self.trace.points[self.at - 1].build

    @property
    def key(self) -> str:
        """Its name in the marks file: series key @ build."""
        return f"{self.series}@{self.build}"

    @property
    def when(self) -> str:
        return self.trace.points[self.at].last


def judged_steps(
    levels: Sequence[Sequence[float]],
    point: str,
    direction: str,
    metric: str,
    *,
    side: int = SIDE,
) -> list[tuple[int, MetricVerdict]]:
    """The steps of *levels* (a build's repeats each) the verdicts call regressed or
    improved: each build where the fit says a step starts (:func:`judge_steps`)."""
    return judge_steps(levels, change_points(levels), point, direction, metric, side=side)


def judge_steps(
    levels: Sequence[Sequence[float]],
    cuts: Sequence[int],
    point: str,
    direction: str,
    metric: str,
    *,
    side: int = SIDE,
) -> list[tuple[int, MetricVerdict]]:
    """Those of the steps starting at *cuts* (sorted build indexes) the verdicts call: each
    judged against the build before, else on the builds' medians of up to *side* builds a
    side (0: never) within the segments the cuts make, where each side has
    :data:`SIDE_AT_LEAST`."""
    if not cuts:
        return []
    found = []
    medians = [float(np.median(v)) for v in levels]
    scatter = math.expm1(BAND * _build_noise(np.log(np.array(medians))))
    bounds = [0, *cuts, len(levels)]
    for n, at in enumerate(cuts):
        base, new = levels[at - 1], levels[at]
        derived = default_tolerance(base, new)
        tolerance, source = (scatter, SCATTER) if scatter > derived else (derived, DERIVED)
        verdict = judge(
            point, direction, metric, base, new, tolerance=tolerance, tolerance_from=source
        )
        lo, hi = max(bounds[n], at - side), min(bounds[n + 2], at + side)
        if verdict.verdict not in ALERTING and min(at - lo, hi - at) >= SIDE_AT_LEAST:
            verdict = judge(point, direction, metric, medians[lo:at], medians[at:hi])
        if verdict.verdict in ALERTING:
            found.append((at, verdict))
    return found


def alerts_of(series: SiteSeries) -> list[Alert]:
    """Every step of every trace of *series* the verdicts call regressed or improved."""
    key, what = series.found.key, series.found.identity.describe()
    return [
        Alert(key, what, trace, at, verdict)
        for trace in series.traces
        for at, verdict in judged_steps(
            [p.values for p in trace.points], key, trace.direction, trace.metric
        )
    ]
