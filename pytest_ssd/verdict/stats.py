"""The statistics of a verdict: an exact one-sided Mann-Whitney U test, a bootstrap interval.

Both work on a handful of repeats a side (``--ssd-repeat``, at most 20 a side for the
exact test): the null distribution of U is counted, not approximated, and the
bootstrap is seeded, so the same samples give the same interval every time.
"""

from __future__ import annotations

import functools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_ssd.errors import ConfigError

#: the largest sample a side the exact distribution is counted for
MAX_EXACT = 20
#: bootstrap resamples, and the seed that makes the interval reproducible
RESAMPLES = 4000
SEED = 33


@functools.cache
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) orderings of two samples give U = 0, 1, ..., n*m.

    U counts the pairs (x, y) with x after y; the last of all n + m values is either an
    x (it beats all m y's) or a y (it beats nothing): f(n, m) = f(n-1, m) shifted by m,
    plus f(n, m-1).
    """
    if n == 0 or m == 0:
        return (1,)
    counts = [0] * (n * m + 1)
    for u, ways in enumerate(_u_counts(n - 1, m)):
        counts[u + m] += ways
    for u, ways in enumerate(_u_counts(n, m - 1)):
        counts[u] += ways
    return tuple(counts)


def u_statistic(x: Sequence[float], y: Sequence[float]) -> float:
    """Mann-Whitney's U of *x*: the pairs with x > y, a tie counting one half."""
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)


def p_greater(x: Sequence[float], y: Sequence[float]) -> float:
    """One-sided exact p that *x* is stochastically greater than *y*: P(U >= U observed).

    As scipy's ``mannwhitneyu(x, y, alternative="greater", method="exact")``: a tie
    counts one half in U and the distribution is the one without ties (U is rounded
    down, which makes p a little larger: never a regression out of ties).
    """
    n, m = len(x), len(y)
    if not 0 < n <= MAX_EXACT or not 0 < m <= MAX_EXACT:
        raise ConfigError(
            f"exact Mann-Whitney test of {n} against {m} samples: 1 to {MAX_EXACT} a side"
        )
    counts = _u_counts(n, m)
    u = math.floor(u_statistic(x, y))
    return sum(counts[u:]) / math.comb(n + m, n)


def smallest_p(n: int, m: int) -> float:
    """The smallest one-sided p that *n* against *m* samples can reach (all of x above y)."""
    return 1 / math.comb(n + m, n)


@dataclass(frozen=True)
class Interval:
    """A bootstrap confidence interval of the ratio of medians new / base."""

    ratio: float
    low: float
    high: float
    level: float


def median_ratio_ci(
    base: Sequence[float], new: Sequence[float], level: float = 0.95, seed: int = SEED
) -> Interval:
    """median(new) / median(base) and its percentile bootstrap interval (seeded).

    Each resample draws both sides again with replacement.  Plain Python, not numpy:
    an xdist worker judges its tests without loading numpy (20 values, 4,000 draws).
    """
    if not base or not new or min(base) <= 0:
        raise ConfigError("a ratio of medians needs positive baseline values")
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choices(new, k=len(new)))
        / statistics.median(rng.choices(base, k=len(base)))
        for _ in range(RESAMPLES)
    )
    tail = (1 - level) / 2
    return Interval(
        statistics.median(new) / statistics.median(base),
        _quantile(ratios, tail),
        _quantile(ratios, 1 - tail),
        level,
    )


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, linear between ranks (numpy's default)."""
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)
