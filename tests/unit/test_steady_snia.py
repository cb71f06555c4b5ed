"""The SNIA PTS steady-state rule against series worked out by hand.

Notation in the comments: the window's rounds are centred on their middle round,
dx = -2, -1, 0, 1, 2 for a 5-round window, so sum(dx**2) = 10 and the
least-squares slope is sum(dx * y) / 10.  Excursions are % of the window mean:
range = (max - min) / mean; slope = |slope| * 4 / mean.
"""

from __future__ import annotations

import json
import math

import pytest

from pytest_ssd.errors import ConfigError, SsdError
from pytest_ssd.steady import SniaRule, SniaTracker, SteadyStateError, evaluate, judge_window

CONVERGES_AT_7 = [100_000, 80_000, 64_000, 60_000, 56_000, 60_000, 60_000]
# odd rounds 100, even rounds 130: every window spans 30 around a mean of 112 or 118
ALTERNATING = [100.0 if r % 2 else 130.0 for r in range(1, 26)]


def test_converges_at_round_7() -> None:
    tracker = SniaTracker()
    verdicts = [tracker.add(v) for v in CONVERGES_AT_7]
    assert verdicts[:4] == [None] * 4, "nothing to judge before round 5"
    first, second, verdict = verdicts[4:]
    # rounds 1-5: mean 360000/5 = 72000, range 44000 = 61.1 %;
    # sum(dx*y) = -200000 - 80000 + 0 + 60000 + 112000 = -108000: slope -10800,
    # drift 10800 * 4 = 43200 = 60 % of 72000
    assert first is not None and not first.attained and not first.done
    assert first.mean == 72_000
    assert first.range_excursion_pct == pytest.approx(44_000 / 72_000 * 100)
    assert first.slope == -10_800 and first.slope_excursion_pct == pytest.approx(60.0)
    # rounds 2-6: mean 320000/5 = 64000, range 24000 = 37.5 %
    assert second is not None and not second.attained
    assert (second.mean, second.range_excursion_pct) == (64_000, 37.5)
    # rounds 3-7: 64000 60000 56000 60000 60000, mean 300000/5 = 60000, range 8000 = 13.3 %;
    # sum(dx*y) = -128000 - 60000 + 0 + 60000 + 120000 = -8000: slope -800 per round,
    # drift 800 * 4 = 3200 = 5.3 %; the line passes (round 5, 60000): intercept 64000
    assert verdict is not None and verdict.attained and tracker.done
    assert verdict.reached_round == 7 and not verdict.exhausted
    assert (verdict.window_first, verdict.window_last) == (3, 7)
    assert verdict.window_values == (64_000, 60_000, 56_000, 60_000, 60_000)
    assert verdict.values == tuple(CONVERGES_AT_7)
    assert verdict.mean == 60_000
    assert verdict.range_excursion_pct == pytest.approx(8_000 / 60_000 * 100)
    assert verdict.slope == -800 and verdict.intercept == 64_000
    assert verdict.fitted(3) == 61_600 and verdict.fitted(7) == 58_400
    assert verdict.slope_excursion_pct == pytest.approx(3_200 / 60_000 * 100)
    assert (verdict.range_limit_pct, verdict.slope_limit_pct) == (20.0, 10.0)
    assert verdict.summary() == (
        "steady state reached at round 7: range 13.3 % ≤ 20 %, slope 5.3 % ≤ 10 % of mean 60,000"
    )
    assert tracker.verdict is verdict


def test_evaluate_stops_at_the_first_window_that_holds() -> None:
    verdict = evaluate([*CONVERGES_AT_7, 1.0, 2.0])
    assert verdict.reached_round == 7
    assert verdict.values == tuple(CONVERGES_AT_7), "rounds after steady state are not judged"


def test_never_converges_within_25_rounds() -> None:
    tracker = SniaTracker()
    for value in ALTERNATING[:-1]:
        tracker.add(value)
        assert not tracker.done
    verdict = tracker.add(ALTERNATING[-1])
    assert verdict is not None and tracker.done
    # rounds 21-25: 100 130 100 130 100, mean 560/5 = 112, range 30 = 26.8 % > 20 %;
    # sum(dx*y) = -200 - 130 + 0 + 130 + 200 = 0: slope 0, intercept 112
    assert not verdict.attained and verdict.exhausted and verdict.reached_round is None
    assert (verdict.window_first, verdict.window_last) == (21, 25)
    assert verdict.window_values == (100, 130, 100, 130, 100)
    assert verdict.mean == 112 and verdict.slope == 0 and verdict.intercept == 112
    assert verdict.range_excursion_pct == pytest.approx(30 / 112 * 100)
    assert not verdict.range_ok and verdict.slope_ok
    assert verdict.summary() == (
        "steady state not reached after 25 rounds: range 26.8 % > 20 %, slope 0.0 % ≤ 10 % "
        "of mean 112 (window rounds 21–25)"
    )
    assert evaluate(ALTERNATING) == verdict
    with pytest.raises(SteadyStateError, match="round 26 after the SNIA rule decided: steady"):
        tracker.add(115.0)
    with pytest.raises(SteadyStateError, match="26 rounds given: the SNIA rule stops at round 25"):
        evaluate([*ALTERNATING, 115.0])


@pytest.mark.parametrize(
    ("window", "attained", "range_pct"),
    [
        # 104 90 110 96 100 (x1000): mean 100000, range 20000 = exactly 20 %: holds;
        # sum(dx*y) = -208000 - 90000 + 0 + 96000 + 200000 = -2000: slope -200, drift 0.8 %
        ((104_000, 90_000, 110_000, 96_000, 100_000), True, 20.0),
        # 110000 -> 110500: mean 500500/5 = 100100, range 20500 = 20.48 %: does not hold
        ((104_000, 90_000, 110_500, 96_000, 100_000), False, 20_500 / 100_100 * 100),
    ],
)
def test_noisy_window_exactly_on_the_range_limit(
    window: tuple[float, ...], attained: bool, range_pct: float
) -> None:
    verdict = evaluate(window)
    assert verdict.range_ok is attained and verdict.attained is attained
    assert verdict.range_excursion_pct == pytest.approx(range_pct)
    assert verdict.slope_ok and verdict.slope_excursion_pct < 1.0


def test_limits_are_judged_on_the_decimals_not_their_float_rounding() -> None:
    window = [0.9, 1.1, 1.0, 1.0, 1.0]
    # in floats 1.1 - 0.9 is 0.20000000000000007, a hair over 20 % of 1.0
    assert (1.1 - 0.9) / 1.0 > 0.2
    verdict = evaluate(window)
    assert verdict.range_ok and verdict.attained and verdict.reached_round == 5


@pytest.mark.parametrize(
    ("last", "slope_ok", "slope"),
    [
        # 95000 97500 100000 102500 105000: mean 100000, range 10 %;
        # sum(dx*y) = -190000 - 97500 + 0 + 102500 + 210000 = 25000: slope 2500,
        # drift 2500 * 4 = 10000 = exactly 10 %: holds
        (105_000, True, 2_500),
        # 105010: mean 100002, sum(dx*y) = 25020: slope 2502, drift 10008 > 10000.2
        (105_010, False, 2_502),
    ],
)
def test_window_exactly_on_the_slope_limit(last: float, slope_ok: bool, slope: float) -> None:
    verdict = evaluate([95_000, 97_500, 100_000, 102_500, last])
    assert verdict.slope == pytest.approx(slope)
    assert verdict.slope_ok is slope_ok and verdict.range_ok
    assert verdict.attained is slope_ok


def test_slope_only_failure() -> None:
    series = [108_000, 104_000, 100_000, 96_000, 92_000]
    verdict = evaluate(series)
    # mean 100000, range 16000 = 16 % <= 20 %; slope -4000, drift 16000 = 16 % > 10 %
    assert verdict.range_ok and not verdict.slope_ok and not verdict.attained
    assert verdict.slope == -4_000 and verdict.intercept == 112_000
    assert verdict.range_excursion_pct == 16.0 and verdict.slope_excursion_pct == 16.0
    assert not verdict.exhausted and not verdict.done
    assert verdict.summary() == (
        "steady state not reached yet at round 5 of at most 25: range 16.0 % ≤ 20 %, "
        "slope 16.0 % > 10 % of mean 100,000 (window rounds 1–5)"
    )
    # the four numbers are parameters
    assert evaluate(series, SniaRule(max_rounds=5)).exhausted
    assert evaluate(series, SniaRule(slope_pct=16)).attained
    assert not evaluate(series, SniaRule(slope_pct=16, range_pct=15.9)).attained
    # a 3-round window sees 100 96 92: mean 96, drift 4000 * 2 = 8000 = 8.3 %
    short = judge_window(series, SniaRule(window=3))
    assert short.attained and (short.window_first, short.mean) == (3, 96_000)


def test_as_dict_is_json() -> None:
    verdict = evaluate(CONVERGES_AT_7)
    data = verdict.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["attained"] is True and data["reached_round"] == 7
    assert data["window_values"] == [64_000, 60_000, 56_000, 60_000, 60_000]
    assert data["rule"] == {"window": 5, "range_pct": 20.0, "slope_pct": 10.0, "max_rounds": 25}
    assert data["slope"] == -800 and data["summary"] == verdict.summary()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": 1}, "window 1 must be at least 2"),
        ({"range_pct": 0}, "range_pct 0 must be a positive percentage"),
        ({"slope_pct": math.nan}, "slope_pct nan must be a positive"),
        ({"slope_pct": -10}, "slope_pct -10 must be a positive"),
        ({"max_rounds": 4}, "max_rounds 4 is fewer than the window 5"),
    ],
)
def test_rule_parameters_are_checked(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SniaRule(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "round 3: nan is not a finite number"),
        (math.inf, "round 3: inf is not a finite number"),
        (-1.0, "round 3: -1.0 is negative"),
        ("fast", "round 3: 'fast' is not a number"),
    ],
)
def test_values_are_checked(value: float, message: str) -> None:
    tracker = SniaTracker()
    tracker.add(1.0)
    tracker.add(2.0)
    with pytest.raises(SteadyStateError, match=message) as caught:
        tracker.add(value)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, SsdError)
    assert tracker.values == (1.0, 2.0), "a refused value is not recorded"
    with pytest.raises(SteadyStateError, match=message):
        evaluate([1.0, 2.0, value, 3.0, 4.0])


def test_zero_mean_and_too_few_rounds_are_refused() -> None:
    with pytest.raises(SteadyStateError, match="rounds 1–5 are all 0"):
        evaluate([0, 0, 0, 0, 0])
    tracker = SniaTracker()
    for _ in range(4):
        tracker.add(0.0)
    with pytest.raises(SteadyStateError, match="rounds 1–5 are all 0"):
        tracker.add(0.0)
    assert tracker.values == (0.0,) * 4 and tracker.verdict is None
    with pytest.raises(SteadyStateError, match="4 rounds given: the SNIA window needs 5"):
        evaluate([1, 2, 3, 4])
    with pytest.raises(SteadyStateError, match="2 rounds measured: the SNIA window needs 3"):
        judge_window([1, 2], SniaRule(window=3))
