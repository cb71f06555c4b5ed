"""The plan's estimate of the measurements from their fio jobs, before a drive's first run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.identity import binary_size
from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.plugin.estimates import estimate
from pytest_ssd.state.estimate import Estimate, of_job, of_jobs
from pytest_ssd.state.plan import Stage, render
from pytest_ssd.state.profile import profile_for
from pytest_ssd.state.spec import parse_state
from pytest_ssd.state.speeds import SpeedBook
from pytest_ssd.state.steps import Context, path
from pytest_ssd.state.testtimes import Measured, TestTimes

MiB = 1 << 20
TARGET = 64 * MiB


def _job(**fields: Any) -> FioJob:
    return FioJob(**{"name": "j", "pattern": "rnd", "block_size": 4096, **fields})


def test_a_time_based_job_takes_its_ramp_and_runtime_whatever_its_region() -> None:
    job = _job(runtime_s=30, ramp_s=5, size=MiB, numjobs=4)  # clones run side by side
    assert of_job(job, TARGET) == Estimate(35.0, 0)


def test_a_job_by_amount_says_its_bytes_not_a_made_up_time() -> None:
    assert of_job(_job(io_bytes=8 * MiB, numjobs=2), TARGET) == Estimate(read=16 * MiB)
    one_pass = _job(size=4 * MiB, ramp_s=2, read_pct=0)
    assert of_job(one_pass, TARGET) == Estimate(2.0, written=4 * MiB)
    to_the_end = _job(offset=16 * MiB, read_pct=75)
    assert of_job(to_the_end, TARGET) == Estimate(written=12 * MiB, read=36 * MiB)
    said = (of_job(to_the_end, TARGET) + Estimate(30.0, purges=1)).describe()
    assert said == (
        "about 30 s plus 12.0 MiB written, 36.0 MiB read at the drive's speed"
        " and 1 purge(s) not timed on it yet"
    )
    assert Estimate(discarded=MiB).describe() == "1.0 MiB discarded at the drive's speed"


def test_jobs_run_one_after_another_and_each_repeat_runs_them_all() -> None:
    jobs = [_job(runtime_s=1, ramp_s=1), _job(runtime_s=3), _job(io_bytes=MiB)]
    assert of_jobs(jobs, TARGET) == Estimate(5.0, read=MiB)
    assert of_jobs(jobs, TARGET, repeat=3) == Estimate(15.0, read=3 * MiB)
    assert of_jobs([], TARGET) == Estimate()


def _plan(measured: Measured) -> list[str]:
    lines = render("/dev/x", "header", [], SpeedBook(Path("unused")), "key", measured=measured)
    return [line for line in lines if line.startswith(("  measurements:", "  in all:"))]


def test_earlier_times_come_first_declared_jobs_next_and_the_rest_is_said(tmp_path: Path) -> None:
    times = TestTimes.load(tmp_path)
    times.record("key", "quick", "t::a", 100.0)
    declared = {"t::a": Estimate(999.0), "t::b": Estimate(20.0, written=2 * MiB)}
    measured = times.measured("key", "quick", ["t::a", "t::b", "t::c"], declared)
    assert measured == Measured(100.0, 1, 3, 1, Estimate(20.0, written=2 * MiB))
    moved = "plus 2.0 MiB written at the drive's speed"
    assert _plan(measured) == [
        f"  measurements: about 2.0 min {moved} for 2 of 3 test(s) (1 as timed in earlier"
        " runs, 1 from their fio jobs; 1 not timed yet and declaring no jobs)",
        f"  in all: about 2.0 min {moved} and the tests not estimated",
    ]


def test_a_first_run_of_jobs_by_time_only_gives_a_plain_total() -> None:
    assert _plan(Measured(0.0, 0, 2, 2, Estimate(90.0))) == [
        "  measurements: about 90 s for 2 of 2 test(s) (from their fio jobs)",
        "  in all: about 90 s",
    ]


SWEEP = """
import pytest
from pytest_ssd.device.identity import binary_size
from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.job import FioJob

def points(profile):  # the plugin's parametrization (with --dut) is not under test here
    return []

def jobs_of(ssd, n):
    if n == 2:
        return [FioJob.on(ssd.nowhere, name="x", pattern="rnd", block_size=4096, runtime_s=1)]
    r, seconds = ssd.region("rnd"), ssd.profile.snia_round_s
    return [FioJob.on(r, name=f"p{n}", pattern="rnd", block_size=4096, runtime_s=seconds)]

@pytest.mark.ssd_points("n", points, jobs=jobs_of)
@pytest.mark.dut_state("cssd")
@pytest.mark.parametrize("n", [1, 2])
def test_point(n):
    pass
"""


def _items(pytester: pytest.Pytester, source: str, marker: str) -> list[pytest.Item]:
    """The tests of *source*, collected without the plugin's parametrization."""
    pytester.makepyfile(source)
    pytester.makeini(f"[pytest]\nmarkers =\n    dut_state\n    {marker}\n")
    return pytester.inline_genitems()[0]


def test_a_point_is_estimated_on_its_state_and_a_jobs_function_the_plan_cannot_serve_is_not(
    pytester: pytest.Pytester,
) -> None:
    items = _items(pytester, SWEEP, "ssd_points")
    profile = profile_for("full", False)
    first, second = (estimate(item, profile, 1 << 30, repeat=2) for item in items)
    assert first == Estimate(2 * profile.snia_round_s)
    assert second is None  # it reads what only the run's ssd has: left to the run


def test_steps_take_time_only_at_rates_measured_on_the_drive(tmp_path: Path) -> None:
    ctx = Context(4 << 30, profile_for("full", False), "discard")
    steps = path(None, parse_state("cssd"), ctx)  # purge, idle, fills, discard, idles
    book = SpeedBook.load(tmp_path / "speeds.json")
    written = sum(s.write_bytes for s in steps)
    discarded = sum(s.discard_bytes for s in steps if s.kind == "discard")  # a purge: its time
    idle = sum(s.idle_s for s in steps)
    unmeasured = sum((book.estimate("d", s) for s in steps), Estimate())
    assert unmeasured == Estimate(idle, written=written, discarded=discarded, purges=1)
    for step in steps:  # each kind measured once: 1 s a step
        book.record("d", step, 1.0)
    measured = sum((book.estimate("d", s) for s in steps), Estimate())
    assert measured.unknown() == "" and measured.seconds > idle
    lines = render("/dev/x", "h", [Stage("cssd", steps, ["t"], "unknown")], book, "new")
    assert lines[-2:] == [
        f"  total: 1 purge(s), 1 preconditioning(s), {binary_size(written)} written,"
        f" {binary_size(sum(s.discard_bytes for s in steps))} discarded",
        f"  steps: {unmeasured.describe()} (steady state not estimated)",
    ], lines


TEST_JOBS = """
import pytest
from pytest_ssd.fio.job import FioJob

def jobs_of(ssd, n, label):  # the test's parameters by name, dut left out
    assert ssd.need.state.name == "cssd" and label == "x"
    assert ssd.dut.identity.logical_block_size == 512 and ssd.dut.iu.bytes is None  # scratch
    r, size = ssd.region("rnd"), ssd.dut.identity.size_bytes
    return [FioJob.on(r, name=f"j{n}", pattern="rnd", block_size=4096, io_bytes=size >> n)]

@pytest.mark.ssd_jobs(jobs=jobs_of)
@pytest.mark.dut_state("cssd")
@pytest.mark.parametrize("dut", ["d"])
@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("label", ["x"])
def test_plain(dut, n, label):
    pass

@pytest.mark.ssd_jobs.with_args(jobs_of)  # positional: refused
@pytest.mark.dut_state("cssd")
@pytest.mark.parametrize("n", [1])
def test_wrongly_declared(n):
    pass
"""


def test_a_test_declaring_its_jobs_builder_is_estimated_from_it_with_its_parameters(
    pytester: pytest.Pytester,
) -> None:
    items = _items(pytester, TEST_JOBS, "ssd_jobs")
    profile = profile_for("quick", True)
    half, quarter = (estimate(item, profile, 1 << 30, repeat=1) for item in items[:2])
    assert (half, quarter) == (Estimate(read=1 << 29), Estimate(read=1 << 28))
    with pytest.raises(ConfigError, match=r"test_wrongly_declared\[1\]: .*ssd_jobs takes \(jobs="):
        estimate(items[2], profile, 1 << 30, repeat=1)
