"""SNIA PTS throughput test: SEQ 1024 KiB and 128 KiB, 100 % read and 100 % write (METHOD §5).

One test per block size, each after its own purge and WIPC; rounds of a read
and a write cell until the write's MiB/s hold the SNIA rule.
"""

from __future__ import annotations

import pytest

from pytest_ssd import SsdBench
from pytest_ssd.methods.snia.run import PTS_STATE, check_rounds, run_rounds
from pytest_ssd.methods.snia.workloads import THROUGHPUT_TESTS, plan


@PTS_STATE
@pytest.mark.parametrize("name", THROUGHPUT_TESTS)
def test_throughput(ssd: SsdBench, name: str) -> None:
    test = plan(ssd.profile).tests()[name]
    rounds = run_rounds(ssd, test)
    check_rounds(rounds)
    read, write = rounds.window()
    assert read["bw_mib_s"] > 0 and write["bw_mib_s"] > 0
