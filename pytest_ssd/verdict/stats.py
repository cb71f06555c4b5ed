"""The statistics of a verdict: an exact one-sided Mann-Whitney U test, its exact interval.

Both work on a handful of repeats a side (``--ssd-repeat``, at most 20 a side): the null
distribution of U is counted, not approximated, and the interval of the ratio is the
Hodges-Lehmann one that inverts the same test, so a verdict and its interval agree and
the same samples give the same interval every time.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_ssd.errors import ConfigError

#: the largest sample a side the exact distribution is counted for
MAX_EXACT = 20


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
    """The ratio new / base (Hodges-Lehmann) and its exact confidence interval."""

    ratio: float
    low: float
    high: float
    level: float


def excluded(n: int, m: int, level: float) -> int:
    """How many of the n * m pairwise differences an exact *level* interval leaves out at
    each end: the largest k with P(U < k) <= (1 - level) / 2 (0: the interval is unbounded)."""
    counts, total = _u_counts(n, m), math.comb(n + m, n)
    tail, below, k = (1 - level) / 2, 0, 0
    for ways in counts:
        if below + ways > tail * total:
            break
        below += ways
        k += 1
    return k


def shift_ratio_ci(
    base: Sequence[float], new: Sequence[float], level: float = 0.95
) -> Interval | None:
    """new / base as the Hodges-Lehmann shift of the logarithms (the median of every
    log(new) - log(base)), and the exact distribution-free interval that goes with the
    Mann-Whitney test: the k-th smallest to k-th largest of those differences, k from
    U's exact distribution.  None when so few repeats cannot bound it (3 against 3 at 95 %).

    Exact, and the interval of the very test that judges (a bootstrap of medians is neither;
    at 5 repeats a side the two came out alike in 400 simulated A/A pairs, the difference
    is at the edges: 3 against 3 has no 95 % interval).  Plain Python: an xdist worker
    judges its tests without numpy (400 differences).
    """
    if not base or not new or min(base) <= 0 or min(new) <= 0:
        raise ConfigError("a ratio needs positive values on both sides")
    k = excluded(len(base), len(new), level)
    if k == 0:
        return None
    diffs = sorted(math.log(y) - math.log(x) for x in base for y in new)
    return Interval(
        math.exp(statistics.median(diffs)), math.exp(diffs[k - 1]), math.exp(diffs[-k]), level
    )


def fewest_bounded(level: float) -> int:
    """The fewest repeats a side whose exact *level* interval is bounded (4 at 95 %)."""
    return next(n for n in range(2, MAX_EXACT + 1) if excluded(n, n, level) > 0)


@functools.cache
def _inversion_counts(n: int) -> tuple[int, ...]:
    """How many of the n! orders of n distinct values have 0, 1, ... n(n-1)/2 inversions
    (Mahonian numbers): the exact null distribution of Kendall's trend statistic."""
    counts = [1]
    for k in range(2, n + 1):  # the k-th value adds 0 .. k-1 inversions
        grown = [0] * (len(counts) + k - 1)
        for inversions, ways in enumerate(counts):
            for extra in range(k):
                grown[inversions + extra] += ways
        counts = grown
    return tuple(counts)


def trend_p(values: Sequence[float]) -> float:
    """Two-sided exact p of a monotone trend in *values* taken one after another (the
    Mann-Kendall test): the chance that exchangeable repeats come out at least as ordered.

    A tie counts one half an inversion, and the count is rounded towards no trend (a tie
    never makes a trend).  1.0 below 3 values; at most :data:`MAX_EXACT` values.
    """
    n = len(values)
    if n < 3:
        return 1.0
    if n > MAX_EXACT:
        raise ConfigError(f"exact trend test of {n} values: at most {MAX_EXACT}")
    inversions = sum(
        1.0 if a > b else 0.5 if a == b else 0.0
        for i, a in enumerate(values)
        for b in values[i + 1 :]
    )
    most = n * (n - 1) // 2
    # the count of the two tails' nearer end, rounded towards the middle
    tail = math.ceil(min(inversions, most - inversions))
    counts = _inversion_counts(n)
    return min(1.0, 2 * sum(counts[: tail + 1]) / math.factorial(n))
