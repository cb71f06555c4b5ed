"""A verdict per point, direction and metric: regressed, improved, same or unknown.

The new build's repeats of a point are set against the baseline's repeats of the
same point.  For each metric (IOPS, MiB/s, mean latency and the resolved latency
percentiles) the ratio new / base gets its exact Hodges-Lehmann interval, and each side
of the question "worse?" and "better?" an exact one-sided Mann-Whitney test (the test
the interval inverts: they agree):

- **regressed**: worse with p < alpha, and the whole interval lies beyond the
  tolerance band on the worse side, with neither side's repeats drifting;
- **improved**: the same, on the better side;
- **same**: the whole interval lies inside the band;
- **unknown**: anything else, with the repeats a side that would likely decide it.
  One run against one run is always unknown, and so is 3 against 3 (no 95 % interval).

Repeats taken one after another are exchangeable only on a steady host: when a side's
repeats trend one way in the order they were taken (an exact Mann-Kendall test), the
host changed during that run, and a claim of change stays unknown with that reason
(unless its whole interval lies beyond :data:`BEYOND_THE_HOST`: no drift makes that).

The band is ``[1 / (1 + t), 1 + t]`` around a ratio of 1.  The tolerance *t* of a
metric is given (the command line, the datasheet's ``[baseline]``: see
:mod:`pytest_ssd.verdict.tolerance`) or derived from the run-to-run spread:
the baseline's range over its median, or the new build's when that is wider (a
difference smaller than a run's own noise is not called: a host busier during one
run than the other shows as spread), at least :data:`TOLERANCE_FLOOR`;
a derived band wider than :data:`SAME_AT_MOST` never gives "same" (too noisy to say).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from pytest_ssd.results.history import HOST_CPUS
from pytest_ssd.results.record import percentile_us
from pytest_ssd.verdict.metrics import METRICS
from pytest_ssd.verdict.stats import (
    MAX_EXACT,
    fewest_bounded,
    p_greater,
    shift_ratio_ci,
    smallest_p,
    trend_p,
)
from pytest_ssd.verdict.tolerance import DERIVED, Tolerances

VERDICTS = ("regressed", "improved", "same", "unknown")
#: the one-sided significance level, and the interval's confidence
ALPHA = 0.05
LEVEL = 0.95
#: CPUs busy in all on the device's machine that must differ between the sides to matter
#: (two quiet runs of one point here: within 0.05 of each other).  In all, not beside fio:
#: on a machine whose CPUs are all busy, what a slowed fio leaves free the other work takes
#: (beside the test suite here: 1.4 CPUs beside a fio of 0.6, then 1.7 beside a drive
#: slowed to 300 IOPS), so the work beside fio rises because the drive got slower
BUSIER = 0.25
#: or the share of the run a task waited for a CPU (PSI), which keeps rising once every CPU
#: is busy (here: 31 % and 31 % quiet at 290,000 IOPS, 81 % beside three CPU-bound
#: processes; 73 % beside the test suite, 96 % with four CPU-bound processes more)
WAITED = 0.15
#: what a verdict's reason says when the machine was busier during the side it blames
OTHER_WORK = "other work on the device's machine"
#: what a verdict's reason says when a side's repeats trend one way
DRIFTS = "repeats drift"
#: the I/Os a run must hold beyond a percentile for it to be judged: a p99.99 of 10,000 I/Os
#: is one I/O (resolved, and shown), and one I/O moves with every run; 10 place it
#: (p99.99: 100,000 I/Os, p99.9: 10,000, p99: 1,000)
TAIL_IOS = 10
#: the narrowest tolerance band a baseline's spread gives (5 %)
TOLERANCE_FLOOR = 0.05
#: a baseline spread wider than this (derived, not given) never makes a verdict "same"
SAME_AT_MOST = 0.25
#: a change whose whole interval lies beyond this factor is the drive's, whatever the host
#: did (a throttled drive at 1/30 of its IOPS; a governor, a fio version or a load that
#: drifts during a run moves a point less)
BEYOND_THE_HOST = 2.0


def metric_value(direction: Mapping[str, Any], metric: str) -> float | None:
    """One run's figure: None when absent, or a percentile the run cannot resolve or holds
    fewer than :data:`TAIL_IOS` I/Os beyond (never judged)."""
    if metric.startswith("p") and metric.endswith("_us"):
        p = float(metric[1:-3])
        samples = (direction.get("clat") or {}).get("samples")
        if samples is not None and samples * (100 - p) / 100 < TAIL_IOS:
            return None
        return percentile_us(dict(direction), p)
    value = direction.get(metric)
    return None if value is None else float(value)


def samples(runs: Sequence[Mapping[str, Any]], direction: str, metric: str) -> list[float] | None:
    """*metric* of *direction* over runs (measurements' ``metrics``); None if one lacks it."""
    values = [metric_value(run.get(direction) or {}, metric) for run in runs]
    if not values or any(v is None for v in values):
        return None
    return [float(v) for v in values if v is not None]


def spread(values: Sequence[float]) -> float:
    """Run-to-run spread: range / median (0 for a zero median)."""
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle > 0 else 0.0


def default_tolerance(base: Sequence[float], new: Sequence[float] = ()) -> float:
    """The wider of the two runs' spreads, at least the floor."""
    return max(TOLERANCE_FLOOR, spread(base), spread(new) if new else 0.0)


@dataclass(frozen=True)
class MetricVerdict:
    """One metric of one point and direction, judged against the baseline."""

    point: str
    direction: str
    metric: str
    verdict: str
    base_n: int
    new_n: int
    tolerance: float
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    #: one-sided p that the new build is worse, and that it is better
    p_worse: float | None = None
    p_better: float | None = None
    #: for unknown: the repeats a side that would likely decide it
    repeats_needed: int | None = None
    reason: str = ""
    #: where the band came from (:meth:`Tolerances.pick`); empty in records made before
    tolerance_from: str = ""
    #: the test (its node id without the device) and the state group it measured in
    #: (``workload.state``); empty in records made before
    test: str = ""
    state: str = ""

    @property
    def label(self) -> str:
        return METRICS[self.metric][0]

    def line(self) -> str:
        """``rnd-4k-qd1 read p99.9: 1.31× the baseline (95 % CI 1.22–1.40, p = 0.004;
        band ±10 % from sheet.toml [baseline] default)``."""
        head = f"{self.point} {self.direction} {self.label}"
        if self.ratio is None or self.low is None or self.high is None:
            return f"{head}: {self.verdict} ({self.reason})"
        p = self.p_better if self.verdict == "improved" else self.p_worse
        shown = f", p = {p:.2g}" if p is not None else ""
        band = f"; {self.band()}" if self.tolerance_from else ""
        ci = f"{LEVEL:.0%} CI {_x(self.low)}–{_x(self.high)}".replace("%", " %")
        return f"{head}: {_x(self.ratio)}× the baseline ({ci}{shown}{band})"

    def where(self) -> str:
        """``cssd1 · csd/test_qd.py::test_rnd[qd1]``: the state group and the test, as known."""
        return " · ".join(part for part in (self.state, self.test) if part)

    @property
    def band_width(self) -> str:
        """``±10 %``: the tolerance band around a ratio of 1."""
        percent = self.tolerance * 100
        return f"±{percent:.3g} %" if percent < 1000 else f"±{percent:,.0f} %"

    def band(self) -> str:
        """``band ±10 % from sheet.toml [baseline] iops``: the tolerance and where it came from."""
        source = self.tolerance_from
        return f"band {self.band_width} " + (source if source == DERIVED else f"from {source}")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "line": self.line()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricVerdict:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**fields)


def _x(ratio: float) -> str:
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def repeats_to_decide(base_n: int, new_n: int, width: float, band: float) -> int:
    """Repeats a side that could decide: enough for p < alpha, and an interval that fits."""
    need = next(n for n in range(2, MAX_EXACT + 1) if smallest_p(n, n) < ALPHA)
    if width > 0 and band > 0:
        # an interval narrows as 1 / sqrt(n): what shrinks it to the band's width
        need = max(need, math.ceil(min(base_n, new_n) * (width / band) ** 2))
    return min(max(need, min(base_n, new_n) + 1), MAX_EXACT)


def beyond_the_host(v: MetricVerdict) -> bool:
    """The whole interval lies beyond :data:`BEYOND_THE_HOST` either way."""
    if v.low is None or v.high is None:
        return False
    return v.high <= 1 / BEYOND_THE_HOST or v.low >= BEYOND_THE_HOST


def drifting(base: Sequence[float], new: Sequence[float]) -> str:
    """Why a claim cannot stand when a side's repeats, in the order they were taken, trend
    one way (exact Mann-Kendall p < alpha: the host changed during that run), else ''."""
    for side, values in (("the baseline's", base), ("the new run's", new)):
        p = trend_p(values)
        if p < ALPHA:
            way = "rising" if values[-1] > values[0] else "falling"
            return (
                f"{side} {DRIFTS}, {way} one after another (trend p = {p:.2g}): the"
                " host changed during that run; measure again on a steady host"
            )
    return ""


def judge(
    point: str,
    direction: str,
    metric: str,
    base: Sequence[float],
    new: Sequence[float],
    *,
    tolerance: float | None = None,
    tolerance_from: str = "given",
) -> MetricVerdict:
    """The verdict of one metric: *new* repeats against *base* repeats (the last 20 a side).

    *tolerance* None: derived from the runs' spread; *tolerance_from* says where a given
    one came from."""
    base, new = list(base)[-MAX_EXACT:], list(new)[-MAX_EXACT:]
    tol = default_tolerance(base, new) if tolerance is None else tolerance
    source = DERIVED if tolerance is None else tolerance_from
    empty = MetricVerdict(
        point, direction, metric, "unknown", len(base), len(new), tol, tolerance_from=source
    )
    if min(len(base), len(new)) < 2:
        why = f"{len(new)} run against {len(base)}: repeat (--ssd-repeat) to judge"
        return replace(
            empty, repeats_needed=repeats_to_decide(len(base), len(new), 0, 0), reason=why
        )
    if min(base) <= 0 or min(new) <= 0:
        return replace(empty, reason="a run measured 0: no ratio")
    higher_better = METRICS[metric][1]
    interval = shift_ratio_ci(base, new, LEVEL)
    if interval is None:
        n = fewest_bounded(LEVEL)
        why = f"{len(new)} runs against {len(base)} cannot bound the ratio: {n} a side can"
        return replace(empty, repeats_needed=n, reason=why)
    worse = p_greater(base, new) if higher_better else p_greater(new, base)
    better = p_greater(new, base) if higher_better else p_greater(base, new)
    found = replace(
        empty,
        ratio=interval.ratio,
        low=interval.low,
        high=interval.high,
        p_worse=worse,
        p_better=better,
    )
    lo_band, hi_band = 1 / (1 + tol), 1 + tol
    below, above = interval.high < lo_band, interval.low > hi_band
    claim = None
    if worse < ALPHA and (below if higher_better else above):
        claim = "regressed"
    elif better < ALPHA and (above if higher_better else below):
        claim = "improved"
    if claim is not None:
        drift = drifting(base, new)
        if not drift:
            return replace(found, verdict=claim)
        if beyond_the_host(found):  # a drift does not make a drive 30 times slower
            return replace(
                found, verdict=claim, reason=f"{BEYOND_THE_HOST:g}× or more although {drift}"
            )
        # repeats one after another under a changing host are not exchangeable
        return replace(found, reason=drift)
    inside = lo_band <= interval.low and interval.high <= hi_band
    noisy = tolerance is None and tol > SAME_AT_MOST
    if inside and not noisy:
        return replace(found, verdict="same")
    if inside:
        why = f"the runs' own spread is ±{tol:.0%}: too wide to call it the same"
        return replace(found, repeats_needed=None, reason=why.replace("%", " %"))
    width = math.log(interval.high / interval.low)
    need = repeats_to_decide(len(base), len(new), width, 2 * math.log1p(tol))
    why = f"the {LEVEL:.0%} interval straddles the ±{tol:.1%} band".replace("%", " %")
    return replace(found, repeats_needed=need, reason=why)


def judge_point(
    point: str,
    base: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    tolerances: Tolerances | None = None,
    *,
    test: str = "",
    state: str = "",
) -> list[MetricVerdict]:
    """Every metric of every direction both sides measured (runs as measurements' ``metrics``),
    each with its band from *tolerances* (derived from the spread when none sets it); each
    verdict names *test* and its *state* group."""
    given = tolerances or Tolerances()
    found: list[MetricVerdict] = []
    both = {d for run in base for d in run} & {d for run in new for d in run}
    directions = sorted(both - {HOST_CPUS})
    for direction in directions:
        for metric in METRICS:
            b, n = samples(base, direction, metric), samples(new, direction, metric)
            if b is None or n is None:  # not measured, or a percentile some run cannot resolve
                continue
            tol, source = given.pick(point, metric)
            one = judge(point, direction, metric, b, n, tolerance=tol, tolerance_from=source)
            found.append(replace(one, test=test, state=state))
    return busier(found, base, new)


def _median_of(runs: Sequence[Mapping[str, Any]], key: str) -> float | None:
    """The median of the machine's *key* (``host_cpus``) over *runs* (None: not recorded)."""
    values = [(run.get(HOST_CPUS) or {}).get(key) for run in runs]
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def _busier_side(
    base: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """("regressed" or "improved": the claim the difference could make, why), or None."""
    for key, limit, unit in (("busy", BUSIER, "CPUs busy"), ("waiting", WAITED, "")):
        then, now = _median_of(base, key), _median_of(new, key)
        if then is None or now is None or abs(now - then) < limit:
            continue
        if unit:
            said = (
                f"{now:.1f} {unit} during the new run's repeats, {then:.1f} during the baseline's"
            )
        else:
            said = (
                f"a task waited for a CPU {now:.0%} of the new run's repeats, {then:.0%} of the"
                " baseline's"
            ).replace("%", " %")
        return ("regressed" if now > then else "improved"), f"{OTHER_WORK}: {said}"
    return None


def busier(
    verdicts: list[MetricVerdict],
    base: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
) -> list[MetricVerdict]:
    """*verdicts* with a claim made "unknown" when the machine did more other work during
    the side it blames (the new build's repeats of a regression, the baseline's of an
    improvement): :data:`BUSIER` CPUs or more busy in all, or a task waiting for a CPU
    :data:`WAITED` more of the time (PSI: it keeps rising once every CPU is busy).  A host's
    load, not the drive, may have moved it, by any factor (fio waiting for a CPU made a loop
    device's p99 18 times as long).  A drive that got slower does less I/O, so its machine
    less work in all (the work beside fio may rise, taking the CPU fio left): a true
    regression never looks busier."""
    found = _busier_side(base, new)
    if found is None:
        return verdicts
    blamed, why = found
    return [
        replace(v, verdict="unknown", reason=why, repeats_needed=None) if v.verdict == blamed else v
        for v in verdicts
    ]
