"""fio's native steady state through the real engine: our options, fio 3.33, our parser."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_ssd.fio.engine import run_jobs
from pytest_ssd.fio.job import FioJob
from pytest_ssd.steady import FioSteadyRule
from tests.fake_machine import HERE

RUNTIME_CAP_S = 30


def test_steady_read_stops_early_with_attained(
    loop_device: Callable[..., Path], tmp_path: Path
) -> None:
    # reads of a sparse loop device are as steady as I/O gets: a 50 %/s slope limit holds
    # as soon as the 3-second window is full
    rule = FioSteadyRule(limit=50, duration_s=3)
    job = FioJob("ss", "rnd", 4096, iodepth=8, runtime_s=RUNTIME_CAP_S, extra=rule.options())
    run = run_jobs([job], loop_device(64), artifacts=tmp_path / "fio", readonly=True, runner=HERE)
    result = run.result(job)
    state = result.steadystate
    assert state is not None, run.completed.stdout[:500]
    assert state.attained and state.kind == "bw_slope" and state.limit == 50.0
    assert state.duration_s == 3 and len(state.bw_bytes_s) == 3 and min(state.iops) > 0
    assert abs(state.criterion) < 50
    assert result.elapsed_s < RUNTIME_CAP_S, "fio ends the job once steady state holds"
    assert result.options["steadystate"] == "bw_slope:50%"
