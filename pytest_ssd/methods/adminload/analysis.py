"""The latency cost of admin polling, judged as a build against its baseline is.

The runs with polling are set against the runs without, taken in turns, with the judge
of :mod:`pytest_ssd.verdict.judge` (exact Mann-Whitney test, Hodges-Lehmann interval,
the tolerance band given by the datasheet's ``[baseline]`` or derived from the runs' own
spread, drifting repeats): **regressed** fails the check, **same** (or improved) passes
it, **unknown** is not judged with the judge's reason.  A percentile a run cannot
resolve (or holds fewer than ten I/Os beyond) is shown as such and never judged.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ssd.fio.results import ios_to_resolve
from pytest_ssd.verdict.judge import TAIL_IOS, MetricVerdict, judge, samples
from pytest_ssd.verdict.metrics import percentile_metric
from pytest_ssd.verdict.tolerance import Tolerances

#: the percentiles reported and judged
PERCENTILES = (99.0, 99.9)
DIRECTION = "read"
#: the judge's verdict -> the qualification record's
CONTRACT = {"regressed": "fail", "same": "pass", "improved": "pass", "unknown": "not judged"}

#: one run's fio figures by direction (a measurement's ``metrics``)
Run = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class PercentileVerdict:
    """One percentile: its values without and with polling, and the verdict."""

    check: str
    percentile: float
    unpolled_us: tuple[float | None, ...]
    polled_us: tuple[float | None, ...]
    verdict: str
    detail: str
    judged: MetricVerdict | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "percentile": self.percentile,
            "unpolled_us": list(self.unpolled_us),
            "polled_us": list(self.polled_us),
            "verdict": self.verdict,
            "detail": self.detail,
            "judged": None if self.judged is None else self.judged.as_dict(),
        }


def _values(runs: Sequence[Run], p: float) -> tuple[float | None, ...]:
    """Each run's percentile in µs, None where the run cannot resolve it."""
    metric = percentile_metric(p)
    found = []
    for run in runs:
        one = samples([run], DIRECTION, metric)
        found.append(None if one is None else one[0])
    return tuple(found)


def _fewest(runs: Sequence[Run]) -> int:
    counts = [((run.get(DIRECTION) or {}).get("clat") or {}).get("samples") or 0 for run in runs]
    return min(counts) if counts else 0


def _median(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):,.0f} µs" if known else "n/r"


def judge_percentile(
    check: str,
    point: str,
    p: float,
    *,
    unpolled: Sequence[Run],
    polled: Sequence[Run],
    tolerances: Tolerances | None = None,
) -> PercentileVerdict:
    """The verdict of percentile *p*: the polled runs against the unpolled ones."""
    base, new = _values(unpolled, p), _values(polled, p)
    label = f"p{p:g}"
    shown = f"{label} {_median(new)} polled, {_median(base)} not (medians)"
    if None in base or None in new:
        needs = max(ios_to_resolve(p), round(TAIL_IOS * 100 / (100 - p)))
        fewest = _fewest([*unpolled, *polled])
        why = f"{label} needs ≥ {needs:,} I/Os a run, the fewest run had {fewest:,}"
        detail = f"{check}: not judged: {why}"
        return PercentileVerdict(check, p, base, new, "not judged", detail)
    metric = percentile_metric(p)
    tolerance, source = (tolerances or Tolerances()).pick(point, metric)
    one = judge(
        point,
        DIRECTION,
        metric,
        [v for v in base if v is not None],
        [v for v in new if v is not None],
        tolerance=tolerance,
        tolerance_from=source,
    )
    verdict = CONTRACT[one.verdict]
    if one.ratio is not None and one.low is not None and one.high is not None:
        ci = f"{one.ratio:.2f}× (95 % CI {one.low:.2f}–{one.high:.2f}; {one.band()})"
        said = f"{one.verdict}: {ci}"
    else:
        said = one.verdict
    if one.reason:
        said += f": {one.reason}"
    return PercentileVerdict(check, p, base, new, verdict, f"{check}: {shown}: {said}", one)
