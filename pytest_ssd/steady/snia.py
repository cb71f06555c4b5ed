"""The SNIA PTS steady-state rule, implemented literally.

The tracked variable y is measured once per round.  The measurement window is
the last ``window`` rounds (5).  Steady state holds when, over the window,

(a) max(y) - min(y) <= ``range_pct`` (20 %) of mean(y), and
(b) the least-squares line through the window changes by at most ``slope_pct``
    (10 %) of mean(y) across it: |slope| x (window - 1) <= 0.10 x mean(y).

It is checked from round ``window`` on; after ``max_rounds`` (25) the run stops
and steady state is "not reached", judged on the last window.

Both checks are decided in exact rational arithmetic on the values as they print
(``repr``), so a window that sits exactly on a limit holds whatever the rounding
of the floating-point mean or slope; the reported percentages are floats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction

from pytest_ssd.errors import ConfigError, SsdError


class SteadyStateError(SsdError, ValueError):
    """Tracked values that cannot be judged: not finite, negative, all zero, too few or too many."""


@dataclass(frozen=True)
class SniaRule:
    """The four numbers of the SNIA rule; the defaults are the PTS's."""

    window: int = 5
    range_pct: float = 20.0
    slope_pct: float = 10.0
    max_rounds: int = 25

    def __post_init__(self) -> None:
        problems = []
        if self.window < 2:
            problems.append(f"window {self.window} must be at least 2 rounds (a line needs two)")
        for name, pct in (("range_pct", self.range_pct), ("slope_pct", self.slope_pct)):
            if not (math.isfinite(pct) and pct > 0):
                problems.append(f"{name} {pct!r} must be a positive percentage")
        if self.max_rounds < self.window:
            problems.append(f"max_rounds {self.max_rounds} is fewer than the window {self.window}")
        if problems:
            raise ConfigError("SNIA steady-state rule: " + "; ".join(problems))


def _exact(value: float) -> Fraction:
    # the decimal the value prints as: 0.9 and 1.1 lie exactly 20 % of 1.0 apart
    return Fraction(repr(float(value)))


def _checked(round_no: int, value: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SteadyStateError(f"round {round_no}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise SteadyStateError(f"round {round_no}: {number!r} is not a finite number")
    if number < 0:
        raise SteadyStateError(
            f"round {round_no}: {number!r} is negative; the tracked variable is a rate or a time"
        )
    return number


def _check_text(name: str, excursion: float, ok: bool, limit: float) -> str:
    return f"{name} {excursion:.1f} % {'≤' if ok else '>'} {limit:g} %"


def _quantity(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


@dataclass(frozen=True)
class SniaVerdict:
    """The rule applied to the window that ends at the last round in ``values``.

    Rounds are numbered from 1; the fitted line is ``y = slope * round + intercept``.
    Excursions and limits are percentages of the window's mean.
    """

    rule: SniaRule
    values: tuple[float, ...]
    window_first: int
    window_last: int
    window_values: tuple[float, ...]
    mean: float
    range_excursion_pct: float
    range_limit_pct: float
    range_ok: bool
    slope: float
    intercept: float
    slope_excursion_pct: float
    slope_limit_pct: float
    slope_ok: bool

    @property
    def rounds(self) -> int:
        """Rounds measured so far."""
        return len(self.values)

    @property
    def attained(self) -> bool:
        """Whether both checks hold on the window."""
        return self.range_ok and self.slope_ok

    @property
    def reached_round(self) -> int | None:
        """The round at which steady state was reached, or None."""
        return self.window_last if self.attained else None

    @property
    def exhausted(self) -> bool:
        """Not attained and no rounds left: steady state not reached."""
        return not self.attained and self.rounds >= self.rule.max_rounds

    @property
    def done(self) -> bool:
        """Whether the round loop should stop (attained or out of rounds)."""
        return self.attained or self.exhausted

    def fitted(self, round_no: float) -> float:
        """The least-squares line at ``round_no``."""
        return self.slope * round_no + self.intercept

    def summary(self, mean: str | None = None) -> str:
        """One line: the outcome, both excursions against their limits, and the mean.

        *mean*: the mean as written (a graph gives a latency in its unit), else a plain number.
        """
        spread = _check_text("range", self.range_excursion_pct, self.range_ok, self.range_limit_pct)
        drift = _check_text("slope", self.slope_excursion_pct, self.slope_ok, self.slope_limit_pct)
        checks = f"{spread}, {drift} of mean {mean or _quantity(self.mean)}"
        if self.attained:
            return f"steady state reached at round {self.reached_round}: {checks}"
        window = f"(window rounds {self.window_first}–{self.window_last})"
        if self.exhausted:
            return f"steady state not reached after {self.rounds} rounds: {checks} {window}"
        return (
            f"steady state not reached yet at round {self.rounds} of at most "
            f"{self.rule.max_rounds}: {checks} {window}"
        )

    def as_dict(self) -> dict[str, object]:
        """JSON-able form, with the derived outcome fields."""
        data = asdict(self)
        data["values"] = list(self.values)
        data["window_values"] = list(self.window_values)
        data.update(
            attained=self.attained,
            reached_round=self.reached_round,
            exhausted=self.exhausted,
            summary=self.summary(),
        )
        return data


def judge_window(values: Sequence[float], rule: SniaRule) -> SniaVerdict:
    """Apply *rule* to the window of the last ``rule.window`` rounds of *values*.

    Raises :class:`SteadyStateError` for fewer rounds than the window, a value that
    is not a finite non-negative number, or a window whose mean is 0.
    """
    checked = tuple(_checked(i, v) for i, v in enumerate(values, start=1))
    n, last = rule.window, len(checked)
    if last < n:
        raise SteadyStateError(f"{last} rounds measured: the SNIA window needs {n}")
    first = last - n + 1
    ys = [_exact(v) for v in checked[-n:]]
    mean = sum(ys, Fraction(0)) / n
    if mean == 0:
        raise SteadyStateError(
            f"rounds {first}–{last} are all 0: the SNIA limits are percentages of the mean"
        )
    x_mean = Fraction(first + last, 2)
    deviations = [x - x_mean for x in range(first, last + 1)]
    slope = sum((dx * (y - mean) for dx, y in zip(deviations, ys, strict=True)), Fraction(0))
    slope /= sum(dx * dx for dx in deviations)
    spread = (max(ys) - min(ys)) * 100 / mean
    drift = abs(slope) * (n - 1) * 100 / mean
    return SniaVerdict(
        rule=rule,
        values=checked,
        window_first=first,
        window_last=last,
        window_values=checked[-n:],
        mean=float(mean),
        range_excursion_pct=float(spread),
        range_limit_pct=rule.range_pct,
        range_ok=spread <= _exact(rule.range_pct),
        slope=float(slope),
        intercept=float(mean - slope * x_mean),
        slope_excursion_pct=float(drift),
        slope_limit_pct=rule.slope_pct,
        slope_ok=drift <= _exact(rule.slope_pct),
    )


class SniaTracker:
    """The round loop: ``add`` each round's value until ``done``.

    Usage::

        tracker = SniaTracker()
        while not tracker.done:
            tracker.add(measure_one_round())
        print(tracker.verdict.summary())
    """

    def __init__(self, rule: SniaRule | None = None) -> None:
        self.rule = rule or SniaRule()
        self._values: list[float] = []
        self._verdict: SniaVerdict | None = None

    @property
    def values(self) -> tuple[float, ...]:
        """Every round's value so far."""
        return tuple(self._values)

    @property
    def verdict(self) -> SniaVerdict | None:
        """The latest verdict; None before round ``rule.window``."""
        return self._verdict

    @property
    def done(self) -> bool:
        """Steady state reached, or ``rule.max_rounds`` rounds measured without it."""
        return self._verdict is not None and self._verdict.done

    def add(self, value: float) -> SniaVerdict | None:
        """Record one round's value; the verdict on the latest window, None before there is one.

        Raises :class:`SteadyStateError` for a bad value or once the loop is done.
        """
        if self._verdict is not None and self._verdict.done:
            raise SteadyStateError(
                f"round {len(self._values) + 1} after the SNIA rule decided: "
                f"{self._verdict.summary()}"
            )
        values = [*self._values, _checked(len(self._values) + 1, value)]
        if len(values) >= self.rule.window:
            self._verdict = judge_window(values, self.rule)
        # recorded only once judged: a refused value or window leaves the tracker as it was
        self._values = values
        return self._verdict


def evaluate(values: Iterable[float], rule: SniaRule | None = None) -> SniaVerdict:
    """Run the SNIA rule over a whole series, as the round loop would have.

    The verdict is at the first round where steady state holds (later values are
    not judged), else on the last window.  Raises :class:`SteadyStateError` for
    fewer rounds than the window or more than ``rule.max_rounds``.
    """
    rule = rule or SniaRule()
    series = list(values)
    if len(series) > rule.max_rounds:
        raise SteadyStateError(
            f"{len(series)} rounds given: the SNIA rule stops at round {rule.max_rounds}"
        )
    tracker = SniaTracker(rule)
    for value in series:
        tracker.add(value)
        if tracker.done:
            break
    if tracker.verdict is None:
        raise SteadyStateError(f"{len(series)} rounds given: the SNIA window needs {rule.window}")
    return tracker.verdict
