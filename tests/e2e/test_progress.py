"""A long measurement shows a live line from fio's status; under xdist each worker's line too."""

from __future__ import annotations

import re
from pathlib import Path
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


SLOW = """
import time

from pytest_ssd.fio.job import FioJob


def test_a_short_job_that_runs_long(ssd):
    # 24 MiB is planned short (no live line by size); at 2 MiB/s it takes 12 s
    job = FioJob("slow-read", "seq", 1 << 20, iodepth=1, read_pct=100, size=24 << 20,
                 extra=(("rate", "2m"),))
    assert ssd.run(job).directions["read"].io_bytes == 24 << 20


def test_a_step_of_the_suites_own(ssd):
    with ssd.progress("dd cross-check", planned="8 chunks, dd and fio in turn"):
        time.sleep(11)
"""


def test_no_silent_step_over_10_s_a_line_by_elapsed_time(run_ssd: Any, tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_slow.py").write_text(SLOW)
    run = run_ssd("--dut=scratch:64M", suite=suite)
    run.result.assert_outcomes(passed=2)
    out = run.result.stdout.str()
    assert "Traceback" not in out + run.result.stderr.str()
    # in a log (not a terminal): the first line once 10 s have gone, and the end
    assert re.search(r"^scratch slow-read: running +elapsed 0:00:1\d$", out, re.M), out
    assert re.search(r"^scratch slow-read: done in 0:00:1\d$", out, re.M), out
    checked = (
        r"^scratch dd cross-check: running \(8 chunks, dd and fio in turn\) +elapsed 0:00:1\d$"
    )
    assert re.search(checked, out, re.M), out
    assert re.search(r"^scratch dd cross-check: done in 0:00:1\d$", out, re.M), out
