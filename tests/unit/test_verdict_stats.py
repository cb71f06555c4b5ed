"""The verdict statistics against scipy: exact Mann-Whitney p, seeded bootstrap, verdicts."""

from __future__ import annotations

import random

import pytest
from scipy.stats import mannwhitneyu

from pytest_ssd.errors import ConfigError
from pytest_ssd.verdict.judge import judge, judge_point
from pytest_ssd.verdict.stats import median_ratio_ci, p_greater, smallest_p

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


def test_the_bootstrap_is_seeded_and_holds_the_ratio() -> None:
    one = median_ratio_ci(RECORDED["write_p99"], RECORDED["busy_p99"])
    two = median_ratio_ci(RECORDED["write_p99"], RECORDED["busy_p99"])
    assert one == two, "the same samples give the same interval"
    assert one.low <= one.ratio <= one.high
    assert one.ratio == pytest.approx(10420.224 / 12386.304)
    other = median_ratio_ci(RECORDED["write_p99"], RECORDED["busy_p99"], seed=1)
    assert other.ratio == one.ratio


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
    longer = [v * 1.5 for v in RECORDED["free_p99"]]
    assert judge("p", "read", "p99_us", RECORDED["free_p99"], longer).verdict == "unknown"
    given = judge("p", "read", "p99_us", RECORDED["free_p99"], longer, tolerance=0.05)
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
