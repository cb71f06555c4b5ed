"""The site's step changes: proposed by the step fit, raised only when the verdicts call them."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from pytest_ssd.site_pages.steps import ALERTING, change_points, judged_steps
from pytest_ssd.verdict.judge import judge

#: five repeats within 2 % of each other
REPEATS = (1.0, 1.015, 0.99, 1.008, 0.995)


def _levels(*builds: float) -> list[list[float]]:
    return [[10_000 * level * r for r in REPEATS] for level in builds]


def test_a_step_down_and_back_is_found_at_both_ends() -> None:
    assert change_points(_levels(1.0, 1.01, 0.99, 1.0, 0.33, 1.0)) == [4, 5]


def test_a_lasting_step_is_found_once() -> None:
    assert change_points(_levels(1.0, 1.01, 0.99, 0.8, 0.81, 0.79, 0.8)) == [3]


def test_builds_wobbling_within_their_noise_raise_no_alert() -> None:
    rng = np.random.default_rng(7)
    proposed = alerts = pairs = 0
    for _ in range(100):
        # builds scatter by 2 %, a build's repeats by 1.5 %: twelve builds
        scatter = 1 + rng.normal(0, 0.02, 12)
        levels = [list(10_000 * b * (1 + rng.normal(0, 0.015, 5))) for b in scatter]
        proposed += len(change_points(levels))
        alerts += len(judged_steps(levels, "p", "read", "iops"))
        pairs += sum(
            judge("p", "read", "iops", a, b).verdict in ALERTING for a, b in pairwise(levels)
        )
    # the fit proposes few steps and the verdicts call fewer than 1 % of those series'
    # builds; judging every build against the one before calls several times as many
    assert proposed < 30 and alerts <= 1 and pairs >= 5 * max(alerts, 1)


def test_a_step_the_verdicts_call_carries_their_verdict_interval_and_p() -> None:
    ((at, verdict),) = judged_steps(_levels(1.0, 1.0, 1.01, 1.0, 0.33), "p", "read", "iops")
    assert at == 4 and verdict.verdict == "regressed"
    assert verdict.high is not None and verdict.high < 0.5 and verdict.p_worse is not None
    assert verdict.p_worse < 0.05
    ((at, verdict),) = judged_steps(_levels(1.0, 1.0, 1.01, 1.0, 0.33), "p", "read", "p99_us")
    assert verdict.verdict == "improved"  # lower latency is better


def test_too_little_to_fit_makes_no_step() -> None:
    assert change_points(_levels(1.0)) == []
    assert change_points([[1.0, 2.0], []]) == []
    assert change_points([[0.0, 0.0], [5.0, 5.0]]) == []


def test_a_step_within_one_builds_noise_is_called_on_the_builds_on_each_side() -> None:
    # repeats ±10 %: one build against the next cannot call a step of 15 %; ten builds a
    # side, each build's median one sample, do
    wide = (1.0, 1.1, 0.9, 1.05, 0.95)
    levels = [[10_000 * level * (1 + 0.003 * (b % 3)) * r for r in wide]
              for b, level in enumerate([1.0] * 10 + [0.85] * 10)]  # fmt: skip
    assert change_points(levels) == [10]
    assert judged_steps(levels, "p", "read", "iops", side=0) == []
    ((at, verdict),) = judged_steps(levels, "p", "read", "iops")
    assert at == 10 and verdict.verdict == "regressed" and verdict.base_n == 10


def test_a_few_builds_apart_are_not_judged_on_the_builds_on_each_side() -> None:
    # a step of 20 % lasting 3 builds: too short a level to stand for more than its builds
    # (a host that stalled for a while makes such runs)
    wide = (1.0, 1.1, 0.9, 1.05, 0.95)
    levels = [[10_000 * level * (1 + 0.003 * (b % 3)) * r for r in wide]
              for b, level in enumerate([1.0] * 10 + [0.8] * 3 + [1.0] * 10)]  # fmt: skip
    assert change_points(levels) == [10, 13]
    assert judged_steps(levels, "p", "read", "iops") == []


def test_runs_without_repeats_alert_once_four_builds_on_each_side_show_a_step() -> None:
    builds = [1.0] * 10 + [0.5] * 10
    levels = [[10_000 * level * (1 + 0.01 * (b % 3))] for b, level in enumerate(builds)]
    assert [at for at, _ in judged_steps(levels, "p", "read", "iops")] == [10]
    assert judged_steps(levels[:13], "p", "read", "iops") == []  # 3 builds after it
