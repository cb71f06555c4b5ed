"""Repeated runs of one measurement (``--ssd-repeat``): mean, spread and stability (seed 004).

Seed 004 reports the mean and spread over runs; seed 001 drops the highest and
the lowest run and averages the rest.  A measurement whose coefficient of
variation exceeds the threshold is flagged unstable.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_ssd.fio.results import pooled_percentiles
from pytest_ssd.results.record import Measurement, percentile_us

#: the per-direction figures aggregated over runs
METRICS = ("iops", "bw_mib_s", "bw_mb_s", "lat_mean_us", "p50_us", "p99_us")
#: the coefficient of variation above which a measurement is unstable (5 %)
DEFAULT_CV_MAX = 0.05


@dataclass(frozen=True)
class Spread:
    """One metric over n runs."""

    n: int
    mean: float
    sd: float
    #: sd / mean (0 when the mean is 0)
    cv: float
    min: float
    max: float
    #: the mean without the highest and the lowest run (seed 001); the mean below 3 runs
    trimmed_mean: float
    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("no values")
        mean = statistics.fmean(values)
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        trimmed = sorted(values)[1:-1] if len(values) >= 3 else list(values)
        return cls(
            n=len(values),
            mean=mean,
            sd=sd,
            cv=sd / mean if mean else 0.0,
            min=min(values),
            max=max(values),
            trimmed_mean=statistics.fmean(trimmed),
            values=tuple(values),
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["values"] = list(self.values)
        return data


def _value(direction: dict[str, Any], metric: str) -> float | None:
    if metric == "p50_us":
        return percentile_us(direction, 50.0)
    if metric == "p99_us":
        return percentile_us(direction, 99.0)
    value = direction.get(metric)
    return None if value is None else float(value)


#: the percentile each percentile metric is
PERCENTILES = {"p50_us": 50.0, "p99_us": 99.0}
#: direction -> each run's completion-latency histogram, (ns, count) pairs (fio's json+ bins)
Histograms = Mapping[str, Sequence[Sequence[tuple[int, int]]]]


def aggregate(
    runs: Sequence[Measurement],
    cv_max: float = DEFAULT_CV_MAX,
    histograms: Histograms | None = None,
) -> dict[str, Any]:
    """Per direction and metric, the :class:`Spread` over *runs*; which metrics are unstable.

    A percentile some run could not resolve is left out of that metric (``n``
    says how many runs it has). With every run's *histograms* of a direction, its
    percentiles also get ``pooled``: the percentile of all the runs' I/Os together
    (None: not resolved even so), what reports show; percentiles never average.
    Only throughput (IOPS, MiB/s) decides stability: latency tails vary more by nature.
    """
    result: dict[str, Any] = {"runs": len(runs), "cv_max": cv_max, "unstable": []}
    for direction in sorted({d for m in runs for d in m.metrics}):
        spreads: dict[str, Any] = {}
        for metric in METRICS:
            found = [_value(m.metrics[direction], metric) for m in runs if direction in m.metrics]
            values = [v for v in found if v is not None]
            if values:
                spreads[metric] = Spread.of(values).as_dict()
        bins = (histograms or {}).get(direction, ())
        if bins and len(bins) == sum(direction in m.metrics for m in runs):
            pooled = pooled_percentiles(bins, list(PERCENTILES.values()))
            for metric, p in PERCENTILES.items():
                spreads.setdefault(metric, {"n": 0})["pooled"] = pooled[p]
        result[direction] = spreads
        for metric in ("iops", "bw_mib_s"):
            spread = spreads.get(metric)
            if spread is not None and spread["cv"] > cv_max:
                result["unstable"].append(f"{direction} {metric} CV {spread['cv']:.1%}")
    return result
