"""SNIA PTS IOPS test: RND R/W mixes x block sizes in rounds until steady state (METHOD §3, §5).

Purge and WIPC first; then rounds of every cell (mixes 100/0 … 0/100 outer,
1024 … 0.5 KiB inner, 1 minute each; quick: 3 x 3 cells of 1 s) until the
4 KiB 0/100 IOPS hold the SNIA rule.  Reported: the window's per-cell mean
IOPS as a table and a 2-D plot, and the steady-state pages.
"""

from __future__ import annotations

from pytest_ssd import SsdBench
from pytest_ssd.methods.snia.run import PTS_STATE, check_rounds, run_rounds
from pytest_ssd.methods.snia.workloads import plan


@PTS_STATE
def test_iops(ssd: SsdBench) -> None:
    test = plan(ssd.profile).tests()["iops"]
    rounds = run_rounds(ssd, test)
    check_rounds(rounds)
    window = rounds.window()
    assert len(window) == len(rounds.test.cells) and all(cell["iops"] > 0 for cell in window)
