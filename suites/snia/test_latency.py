"""SNIA PTS latency test: RND 8, 4, 0.5 KiB x 100/0, 65/35, 0/100 at QD1, one worker (METHOD §5).

Rounds until the 4 KiB 0/100 mean latency holds the SNIA rule; reported per
cell over the window: mean, p99.999 (over all the window's I/Os; "n/r" when
they are too few to resolve it) and maximum completion latency (fio's clat).
"""

from __future__ import annotations

from pytest_ssd import SsdBench
from pytest_ssd.methods.snia.run import PTS_STATE, check_rounds, run_rounds
from pytest_ssd.methods.snia.workloads import plan


@PTS_STATE
def test_latency(ssd: SsdBench) -> None:
    test = plan(ssd.profile).tests()["latency"]
    rounds = run_rounds(ssd, test)
    check_rounds(rounds)
    for cell in rounds.window():
        assert 0 < cell["clat_mean_us"] <= cell["clat_max_us"]
        tail = cell["clat_p99999_us"]
        assert tail is None or tail <= cell["clat_max_us"]
        assert (tail is not None) == (cell["ios"] >= 100_000), "p99.999 needs 10^5 I/Os"
