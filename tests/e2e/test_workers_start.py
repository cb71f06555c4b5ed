"""Under ``-n N`` the devices open while xdist starts the workers (pytest_ssd.session.handoff).

A refusal found then is the same one line as without ``-n``: exit 4, nothing made, the
device untouched, and the workers, already started, end without a word (the session's
sweep finds none of them left running).  A run that opens its devices hands them to every
worker, and the header pytest asked for before they were known is shown once they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LoopFactory
from tests.e2e.conftest import digest

USAGE_ERROR = 4


@pytest.mark.parametrize("workers", ["1", "3"])
def test_a_refusal_while_the_workers_start_is_one_line_and_leaves_nothing(
    run_ssd: Any, loop_device: LoopFactory, tmp_path: Path, workers: str
) -> None:
    good, unconfirmed = loop_device(64), loop_device(64)
    before = digest(unconfirmed)
    run = run_ssd(f"--dut={good}", f"--dut={unconfirmed}", f"--ssd-confirm={good}", "-n", workers)
    out = run.result.stdout.str() + run.result.stderr.str()
    assert run.result.ret == USAGE_ERROR, out
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and f"--ssd-confirm={unconfirmed}" in errors[0], out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert "left running" not in out, "every worker ended by itself before the session's sweep"
    assert "worker" not in run.result.stderr.str().lower(), "no worker said anything"
    assert not any(run.report_dir.glob("2*")), "no run folder"
    assert not list(run.report_dir.rglob("report.html")), "no report"
    assert digest(unconfirmed) == before


def test_the_workers_get_the_devices_and_the_header_comes_once_they_are_open(
    run_ssd: Any, loop_device: LoopFactory
) -> None:
    first, second = loop_device(64), loop_device(64)
    named = [f"--dut={dev}" for dev in (first, second)]
    run = run_ssd(
        *named, *(f"--ssd-confirm={dev}" for dev in (first, second)), "-n2", "-k", "rnd-read"
    )
    out = run.result.stdout.str()
    assert run.result.ret == 0, out + run.result.stderr.str()
    run.result.assert_outcomes(passed=2)
    assert {m["device"] for m in run.results()["measurements"]} == {first.name, second.name}
    lines = run.result.outlines
    header = [line for line in lines if line.startswith("pytest-ssd 2")]
    assert header == [f"pytest-ssd {run.run_dir.name}: {run.run_dir}"], out
    for dev in (first, second):
        assert f"  {dev.name}: destroys all data on {dev} (model unknown, no serial)" in lines, out
    results = next(i for i, line in enumerate(lines) if line.startswith(".."))
    assert lines.index(header[0]) < results, "the header comes before the first result"
