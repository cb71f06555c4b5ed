"""The verdict statistics against scipy: exact Mann-Whitney p and interval, trend, verdicts."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy.stats import kendalltau, mannwhitneyu

from pytest_ssd.errors import ConfigError
from pytest_ssd.verdict.calibrate import halves
from pytest_ssd.verdict.judge import judge, judge_point
from pytest_ssd.verdict.stats import p_greater, shift_ratio_ci, smallest_p, trend_p

#: recorded by tests/e2e/test_baseline.py on a 128 MiB loop device, --ssd-repeat=5: rnd-read
#: QD32 IOPS free and with reads capped at 300 IOPS by a blkio cgroup, the p99 (µs) of the
#: free reads, and the rnd-write p99 of the two runs (the cgroup leaves writes alone; the
#: host's load does not); the throttled p99s hold a tie (202375.168, a histogram bin)
RECORDED = {
    "free_iops": [15670.2, 18181.9, 19805.5, 28917.4, 23728.5],
    "throttled_iops": [289.9, 291.2, 290.4, 291.3, 292.7],
    "free_p99": [9371.648, 9240.576, 8224.768, 7176.192, 6651.904],
    "throttled_p99": [208666.624, 217055.232, 202375.168, 202375.168, 212860.928],
    "write_p99": [6324.224, 68681.728, 11075.584, 12386.304, 26345.472],
    "busy_p99": [8978.432, 20054.016, 11862.016, 10420.224, 7569.408],
    "three": [100.0, 101.0, 102.0],
    "three_low": [90.0, 91.0, 92.0],
}


def scipy_p(x: list[float], y: list[float]) -> float:
    return float(mannwhitneyu(x, y, alternative="greater", method="exact").pvalue)


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ("free_iops", "throttled_iops"),
        ("throttled_iops", "free_iops"),
        ("write_p99", "busy_p99"),
        ("busy_p99", "write_p99"),
        ("throttled_p99", "free_p99"),
        ("throttled_p99", "throttled_p99"),  # every value tied with one on the other side
        ("three", "three_low"),
        ("free_iops", "three"),
    ],
)
def test_p_matches_scipy_on_recorded_samples(x: str, y: str) -> None:
    assert p_greater(RECORDED[x], RECORDED[y]) == pytest.approx(
        scipy_p(RECORDED[x], RECORDED[y]), abs=1e-12
    )


def test_p_matches_scipy_on_random_samples_with_ties() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n, m = rng.randint(1, 12), rng.randint(1, 12)
        x = [float(rng.randint(0, 9)) for _ in range(n)]
        y = [float(rng.randint(0, 9)) for _ in range(m)]
        assert p_greater(x, y) == pytest.approx(scipy_p(x, y), abs=1e-12), (x, y)


def test_p_matches_scipy_at_twenty_a_side() -> None:
    rng = random.Random(3)
    x = [rng.gauss(100, 5) for _ in range(20)]
    y = [rng.gauss(97, 5) for _ in range(20)]
    assert p_greater(x, y) == pytest.approx(scipy_p(x, y), rel=1e-9)
    with pytest.raises(ConfigError, match="1 to 20 a side"):
        p_greater([*x, 1.0], y)


def test_the_smallest_p_of_few_repeats() -> None:
    # the facts: 3 against 3 never reaches 0.05 one-sided, 5 against 5 reaches 0.004
    assert smallest_p(3, 3) == pytest.approx(0.05)
    assert smallest_p(5, 5) == pytest.approx(1 / 252)
    assert p_greater(RECORDED["three"], RECORDED["three_low"]) == pytest.approx(0.05)


def _not_rejected(base: list[float], new: list[float], shift: float, alpha: float) -> bool:
    """scipy's two-sided exact Mann-Whitney test keeps the log-shift *shift* (the interval's
    definition: the shifts a test at that level does not reject)."""
    moved = [math.log(v) - shift for v in new]
    logs = [math.log(v) for v in base]
    return float(mannwhitneyu(moved, logs, method="exact").pvalue) > alpha


@pytest.mark.parametrize(
    ("base", "new"),
    [("free_iops", "throttled_iops"), ("write_p99", "busy_p99"), ("free_p99", "busy_p99")],
)
def test_the_interval_is_the_shifts_the_exact_test_keeps(base: str, new: str) -> None:
    b, n = RECORDED[base], RECORDED[new]
    got = shift_ratio_ci(b, n)
    assert got is not None and got.low <= got.ratio <= got.high
    again = shift_ratio_ci(b, n)
    assert got == again, "the same samples give the same interval"
    diffs = sorted(math.log(y) - math.log(x) for x, y in itertools.product(b, n))
    assert got.ratio == pytest.approx(math.exp((diffs[12] + diffs[12]) / 2))  # 25: the 13th
    eps = 1e-9
    low, high = math.log(got.low), math.log(got.high)
    # just inside either end the test keeps the shift; just outside it rejects it
    assert _not_rejected(b, n, low + eps, 0.05) and _not_rejected(b, n, high - eps, 0.05)
    assert not _not_rejected(b, n, low - eps, 0.05)
    assert not _not_rejected(b, n, high + eps, 0.05)


def test_too_few_repeats_bound_no_interval() -> None:
    assert shift_ratio_ci(RECORDED["three"], RECORDED["three_low"]) is None, "3 against 3"
    four = shift_ratio_ci([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0])
    assert four is not None and (four.low, four.high) == pytest.approx((5 / 4, 8 / 1))
    got = judge("p", "read", "iops", RECORDED["three"], RECORDED["three"])
    assert got.verdict == "unknown" and "cannot bound the ratio: 4 a side can" in got.reason


def test_trend_matches_scipy_kendall_exact() -> None:
    rng = random.Random(11)
    for n in (3, 5, 8, 12):
        for _ in range(40):
            values = [rng.random() for _ in range(n)]
            expected = kendalltau(range(n), values, method="exact").pvalue
            assert trend_p(values) == pytest.approx(expected, rel=1e-9), values
    assert trend_p([5.0, 4.0, 3.0, 2.0, 1.0]) == pytest.approx(2 / 120)
    assert trend_p([1.0, 1.0, 1.0, 1.0, 1.0]) == 1.0, "ties make no trend"


def test_a_side_that_drifts_makes_a_claim_unknown() -> None:
    steady = [100.0, 97.0, 102.0, 99.0, 101.0]
    sliding = [80.0, 78.0, 76.0, 74.0, 72.0]  # every repeat slower than the one before
    got = judge("p", "read", "iops", steady, sliding)
    assert got.verdict == "unknown", got
    assert "the new run's repeats drift, falling one after another (trend p = 0.017)" in got.reason
    shuffled = [76.0, 72.0, 80.0, 74.0, 78.0]  # the same values, no order: a regression
    assert judge("p", "read", "iops", steady, shuffled).verdict == "regressed"


def test_calibration_halves_interleave_the_repeats_as_taken() -> None:
    odd, even = halves({"t::p": [{"n": i} for i in range(1, 8)]})
    assert [r["n"] for r in odd["t::p"]] == [1, 3, 5, 7]
    assert [r["n"] for r in even["t::p"]] == [2, 4, 6]


def test_verdicts() -> None:
    slow = judge("rnd-read", "read", "iops", RECORDED["free_iops"], RECORDED["throttled_iops"])
    assert slow.verdict == "regressed"
    assert slow.line() == (
        f"rnd-read read IOPS: 0.015× the baseline (95 % CI {slow.low:.2g}–{slow.high:.2g},"
        f" p = 0.004; band ±{slow.tolerance * 100:.3g} % derived from the runs' spread)"
    )
    assert (
        judge("rnd-read", "read", "p99_us", RECORDED["free_p99"], RECORDED["throttled_p99"]).verdict
        == "regressed"
    )
    fast = judge("rnd-read", "read", "iops", RECORDED["throttled_iops"], RECORDED["free_iops"])
    assert fast.verdict == "improved"
    again = list(reversed(RECORDED["throttled_iops"]))
    same = judge("rnd-read", "read", "iops", RECORDED["throttled_iops"], again)
    assert same.verdict == "same" and same.tolerance == 0.05, "a steady baseline: the floor"
    # the untouched write on a busy host; a baseline spread of 33 % never says "same"
    busy = judge("rnd-write", "write", "p99_us", RECORDED["write_p99"], RECORDED["busy_p99"])
    assert busy.verdict == "unknown", busy
    noisy = judge("rnd-read", "read", "p99_us", RECORDED["free_p99"], RECORDED["free_p99"])
    assert noisy.verdict == "unknown" and "±33 %: too wide to call it the same" in noisy.reason
    # a latency that grows is a regression (lower is better), beyond a band given as 5 %
    # the free reads' p99 fell run after run (9.4 ms to 6.7 ms): the host drifted, and a
    # latency half again as long is not claimed from those repeats, even with a band given
    longer = [v * 1.5 for v in RECORDED["free_p99"]]
    drifted = judge("p", "read", "p99_us", RECORDED["free_p99"], longer, tolerance=0.05)
    assert drifted.verdict == "unknown" and "the baseline's repeats drift" in drifted.reason
    # the same values in another order: a latency that grows is a regression (lower is
    # better), beyond a band given as 5 %, not beyond the runs' own 33 %
    steady = [RECORDED["free_p99"][i] for i in (2, 0, 4, 1, 3)]
    longer = [v * 1.5 for v in steady]
    assert judge("p", "read", "p99_us", steady, longer).verdict == "unknown"
    given = judge("p", "read", "p99_us", steady, longer, tolerance=0.05)
    assert given.verdict == "regressed", "the baseline's own spread is 33 %; 5 % is given"


def test_one_run_against_one_is_unknown_never_a_verdict() -> None:
    one = judge("rnd-read", "read", "iops", [49342.1], [299.9])
    assert one.verdict == "unknown"
    assert one.repeats_needed == 4, "4 against 4 is the fewest that reaches p < 0.05"
    assert "1 run against 1" in one.line()


def test_three_against_three_cannot_regress_and_says_how_many_would() -> None:
    got = judge("p", "read", "iops", RECORDED["three"], RECORDED["three_low"], tolerance=0.02)
    assert got.verdict == "unknown"
    assert got.repeats_needed is not None and got.repeats_needed >= 4


def test_an_unresolved_percentile_is_never_judged() -> None:
    def run(iops: float, resolved: bool) -> dict[str, object]:
        clat = {"percentiles": [{"p": 99.99, "us": 900.0, "resolved": resolved}]}
        return {"read": {"iops": iops, "bw_mib_s": iops / 256, "lat_mean_us": 10.0, "clat": clat}}

    base = [run(v, True) for v in RECORDED["free_iops"]]
    new = [run(v, i != 2) for i, v in enumerate(RECORDED["throttled_iops"])]
    metrics = {v.metric: v.verdict for v in judge_point("rnd-read", base, new)}
    assert "p99.99_us" not in metrics, "one run could not resolve it"
    assert metrics["iops"] == "regressed"
    assert metrics["bw_mib_s"] == "regressed"
    assert metrics["lat_mean_us"] == "same"


def test_a_percentile_few_ios_lie_beyond_is_not_judged() -> None:
    """p99.99 of 50,000 I/Os is resolved (5 lie beyond it) but moves with every run: only
    percentiles with 10 I/Os or more beyond them are judged."""

    def run(iops: float) -> dict[str, object]:
        percentiles = [{"p": p, "us": 900.0 * iops / 1000, "resolved": True} for p in (99.9, 99.99)]
        clat = {"samples": 50_000, "percentiles": percentiles}
        return {"read": {"iops": iops, "clat": clat}}

    base = [run(v) for v in RECORDED["free_iops"]]
    metrics = {v.metric for v in judge_point("rnd-read", base, base)}
    assert "p99.9_us" in metrics, "50 I/Os beyond it"
    assert "p99.99_us" not in metrics, "5 I/Os beyond it"


def test_the_advice_counts_each_cause_of_unknown_apart() -> None:
    """More repeats decide an interval that straddles the band, not a spread too wide to
    call: the advice says which unknowns what would decide."""
    from pytest_ssd.verdict.summary import DriveVerdicts  # noqa: PLC0415

    straddles = judge("p", "read", "iops", [100, 101, 99, 102, 98], [96, 97, 95, 99, 94])
    noisy = judge("p", "read", "iops", RECORDED["free_iops"], RECORDED["free_iops"])
    drifted = judge("p", "read", "iops", [100.0, 97.0, 102.0, 99.0, 101.0], [80, 78, 76, 74, 72])
    assert [v.verdict for v in (straddles, noisy, drifted)] == ["unknown"] * 3
    assert straddles.repeats_needed and noisy.repeats_needed is None
    advice = DriveVerdicts("d", (straddles, noisy, drifted, noisy)).advice()
    assert advice is not None
    parts = advice.split("; ")
    assert parts[0] == (
        "1 unknown because a run's repeats drift one way: measure again on a steady host"
    )
    assert parts[1].startswith("run ") and parts[1].endswith("to decide 1 unknown")
    assert parts[2].startswith("2 unknown from runs too noisy to call")
