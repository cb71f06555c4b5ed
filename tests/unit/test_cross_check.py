"""A cross-check judged against its own noise: dd against fio in the speed profile."""

from __future__ import annotations

import pytest

from pytest_ssd.verdict.noise import AGREES, DISAGREES, NOISE, cross_check
from suites.csd.test_fill_drive import judge_cross_check

#: MiB/s per chunk, each tool reading the same 8 chunks in turn
QUIET = {"fio": [1012.0, 998.0, 1005.0, 989.0, 1020.0, 1001.0, 995.0, 1010.0]}
#: a reader 8 times faster than fio on every chunk: a cache answered, or a unit slipped
CACHED_DD = [8150.0, 7900.0, 8020.0, 8300.0, 7990.0, 8110.0, 8060.0, 8240.0]
#: the issue's busy host: dd 158 MiB/s and fio 59 in all, ratio 2.66, chunk by chunk
BUSY = {
    "fio": [35.0, 118.0, 52.0, 71.0, 40.0, 95.0, 60.0, 48.0],
    "dd": [150.0, 171.0, 90.0, 163.0, 140.0, 188.0, 158.0, 120.0],
}


def test_separated_samples_still_fail() -> None:
    check = cross_check(("fio", QUIET["fio"]), ("dd", CACHED_DD), 1.5)
    assert check.verdict == DISAGREES
    assert check.separation > 7
    with pytest.raises(
        AssertionError, match=r"disagrees: dd 8,085 MiB/s .* beyond a factor of 1\.5"
    ):
        judge_cross_check(check)


def test_a_busy_host_is_not_judged_with_the_spreads() -> None:
    check = cross_check(("fio", BUSY["fio"]), ("dd", BUSY["dd"]), 1.5)
    assert check.ratio > 2.5, "the medians lie beyond the factor"
    assert check.verdict == NOISE
    with pytest.raises(pytest.skip.Exception) as skipped:
        judge_cross_check(check)
    line = str(skipped.value)
    assert line.startswith("not judged: noise: dd 154 MiB/s (90–188, ×2.09), fio 56 MiB/s")
    assert "×3.37" in line and "\n" not in line


def test_overlapping_sides_beyond_the_factor_are_noise_not_a_failure() -> None:
    # narrow sides, medians 2 x apart, but one chunk of each lies within the factor
    check = cross_check(("fio", [100, 101, 102, 160]), ("dd", [200, 201, 202, 130]), 1.5)
    assert check.gap > 1.5 and check.separation < 1.5
    assert check.verdict == NOISE


def test_agreeing_tools_pass() -> None:
    dd = [v * 1.1 for v in QUIET["fio"]]
    check = cross_check(("fio", QUIET["fio"]), ("dd", dd), 1.5)
    assert check.verdict == AGREES
    judge_cross_check(check)
    assert check.line().startswith("agrees: dd")


def test_a_side_without_positive_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="dd: a cross-check needs positive samples"):
        cross_check(("fio", [1.0]), ("dd", []), 1.5)
