"""Repeated runs (--ssd-repeat): spread, seed 001's trimmed mean, stability."""

from __future__ import annotations

import pytest

from pytest_ssd.analysis.repeat import Spread, aggregate
from tests.unit.db_fixtures import CORNERS, corner


def test_spread_of_five_runs_drops_max_and_min_for_the_trimmed_mean() -> None:
    spread = Spread.of([100.0, 90.0, 110.0, 130.0, 70.0])
    assert spread.mean == 100.0 and spread.trimmed_mean == 100.0
    assert spread.sd == pytest.approx(22.3607, rel=1e-4)  # sample sd (n - 1)
    assert spread.cv == pytest.approx(0.223607, rel=1e-4)
    assert (spread.min, spread.max, spread.n) == (70.0, 130.0, 5)
    assert Spread.of([1.0, 2.0, 9.0]).trimmed_mean == 2.0
    assert Spread.of([4.0, 6.0]).trimmed_mean == 5.0  # below 3 runs: the mean
    assert Spread.of([5.0]).sd == 0.0


def test_aggregate_flags_throughput_beyond_the_cv_threshold() -> None:
    runs = [corner("d0", CORNERS[2], iops) for iops in (1000.0, 1010.0, 990.0)]
    steady = aggregate(runs, cv_max=0.05)
    assert steady["runs"] == 3 and steady["unstable"] == []
    assert steady["read"]["iops"]["mean"] == 1000.0 and steady["read"]["iops"]["n"] == 3
    assert steady["read"]["p99_us"]["mean"] == 300.0 and steady["read"]["p99_us"]["sd"] == 0.0
    shaky = aggregate([corner("d0", CORNERS[2], iops) for iops in (1000.0, 1300.0, 700.0)])
    assert shaky["unstable"] == ["read iops CV 30.0%", "read bw_mib_s CV 30.0%"]


def test_a_percentile_a_run_cannot_resolve_is_left_out_of_its_spread() -> None:
    runs = [corner("d0", CORNERS[0], 500.0) for _ in range(3)]
    runs[1].metrics["read"]["clat"]["percentiles"][2]["resolved"] = False  # p99 of run 2
    result = aggregate(runs)
    assert result["read"]["p99_us"]["n"] == 2 and result["read"]["iops"]["n"] == 3
