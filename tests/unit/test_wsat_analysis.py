"""WSAT analysis: IOPS and GiB written from fio's bandwidth logs, rounds, the steady region.

``fill_bw.log`` is a golden fio 3.33 averaged bandwidth log (SEQ 128 KiB writes,
10 ms windows, KiB/s); the mixed log below is fio's layout for a read/write
job: a read and a write line per window.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_ssd.analysis.fill import read_log
from pytest_ssd.methods.wsat.workloads import round_means, steady_region, wsat_log
from pytest_ssd.steady.snia import SniaRule

GOLDEN = Path(__file__).parents[1] / "golden" / "fio"
MIXED = """\
100, 1000, 0, 0, 0
100, 3000, 1, 0, 0
200, 2000, 0, 0, 0
200, 2000, 1, 0, 0
"""


def test_write_log_gives_iops_and_bytes_written() -> None:
    bw = read_log(GOLDEN / "fill_bw.log")
    log = wsat_log(bw, 128 << 10)
    assert len(log.t_s) == 40 and log.t_s[0] == pytest.approx(0.121)
    # first line: 1,815,272 KiB/s over the first 121 ms
    assert log.iops[0] == pytest.approx(1_815_272 / 128)
    assert log.written[0] == pytest.approx(1_815_272 * 1024 * 0.121)
    assert np.all(np.diff(log.written) > 0)


def test_mixed_log_adds_directions_and_counts_only_writes(tmp_path: Path) -> None:
    path = tmp_path / "mixed_bw.1.log"
    path.write_text(MIXED)
    log = wsat_log(read_log(path), 512)
    assert log.t_s.tolist() == [0.1, 0.2]
    assert log.iops.tolist() == [4000 * 2, 4000 * 2], "KiB/s x 1024 / 512 B, read + write"
    assert log.written.tolist() == pytest.approx([3000 * 1024 * 0.1, 5000 * 1024 * 0.1])


def test_round_means_take_whole_rounds_only() -> None:
    log = wsat_log(read_log(GOLDEN / "fill_bw.log"), 128 << 10)
    rounds = round_means(log, 0.1)
    whole = int(log.t_s[-1] // 0.1)
    assert len(rounds) == whole == 5
    inside = (log.t_s > 0.1) & (log.t_s <= 0.2)
    assert rounds[1] == pytest.approx(log.iops[inside].mean())


def test_steady_region_marks_every_holding_window() -> None:
    # a drop after the cache, then flat: the windows of rounds 6-10 (22, 20, 20, 20, 21:
    # range 2 = 9.7 % of 20.6, slope -0.2 x 4 = 3.9 %) and 7-11 hold, 5-9 (40 ...) does not
    rounds = np.array([100, 100, 100, 60, 40, 22, 20, 20, 20, 21, 20], dtype=float)
    rule = SniaRule()
    region = steady_region(rounds, rule)
    assert region.spans == ((6, 11),), "rounds 6-10 and 7-11"
    assert region.first is not None and region.first.window_first == 6
    assert region.rounds_in == 6 and "steady from round 6 (t = 5 s)" in region.summary(1.0)


def test_steady_region_none_and_gaps() -> None:
    falling = np.array([100.0 - 10 * i for i in range(8)])
    region = steady_region(falling)
    assert not region.reached and region.first is not None and not region.first.attained
    assert region.summary(60).startswith("no steady state over 8 rounds of 60 s")
    gap = np.array([20, 20, 20, np.nan, 20, 20, 20, 20, 20], dtype=float)
    assert steady_region(gap).spans == ((5, 9),), "no window across the round without samples"
    assert steady_region(np.array([1.0, 2.0])).first is None
