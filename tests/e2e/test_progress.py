"""A long measurement shows a live line from fio's status; under xdist each worker's line too."""

from __future__ import annotations

import re
from typing import Any

from tests.e2e.conftest import REPO

CSD = REPO / "suites" / "csd"
DONE = r"{dut} fill-pass-1: done in \d:\d\d:\d\d \(1,024 MiB, [\d,]+ MiB/s\)"


def test_the_fill_drive_shows_its_progress_here_and_from_each_worker(run_ssd: Any) -> None:
    # a pass over a 1 GiB device is long enough for a line (pytest_ssd.state.progress.MIN_BYTES);
    # in a log (not a terminal) the first line and the last are written
    run = run_ssd("--dut=scratch:1G", "-k", "test_fill_drive", suite=CSD)
    assert run.result.ret == 0, run.result.stdout.str()
    out = run.result.stdout.str()
    # the last line's amount is what fio's status documents said (the final one included)
    assert re.search(DONE.format(dut="scratch"), out), out
    # a line while it runs, when fio reported (once a second) before the pass ended
    running = re.findall(r"^scratch fill-pass-1: +[\d.]+ %.*$", out, re.M)
    # a sequential fill's rate in MiB/s (IOPS are for small-block random jobs)
    assert all(re.search(r" [\d,]+ MiB/s +elapsed \d:\d\d:\d\d +left ", r) for r in running)

    run = run_ssd(
        "-n", "2", "--dut=scratch:1G", "--dut=scratch:1G", "-k", "test_fill_drive", suite=CSD
    )
    assert run.result.ret == 0, run.result.stdout.str()
    out = run.result.stdout.str()
    # each worker's newest line, on a line of its own, before the summary
    shown = re.findall(r"^\[(gw\d)\] (scratch(?:-2)?) .*$", out, re.M)
    assert {worker for worker, _ in shown} == {"gw0", "gw1"}, out
    assert {dut for _, dut in shown} == {"scratch", "scratch-2"}, out
    assert out.index("[gw") < out.index("pytest-ssd environment")
