"""The plan printed at the start: the run's total with the measurements, and whose data goes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.e2e.conftest import REPO
from tests.e2e.test_states import READ_IN_STATE, _suite

ONE_STATE = (
    READ_IN_STATE
    + """

@pytest.mark.dut_state("cssd")
@pytest.mark.parametrize("n", range(3))
def test_in_cssd(ssd, n):
    assert read(ssd, "rnd", f"cssd-{n}").directions["read"].io_bytes > 0
"""
)


def _plan(run: Any) -> list[str]:
    out = run.result.outlines
    start = next(i for i, line in enumerate(out) if "pytest-ssd plan" in line)
    return [line for line in out[start + 1 :] if line.startswith("  ")]


def test_the_plan_names_what_it_destroys_and_totals_the_measurements_once_timed(
    run_ssd: Any, loop_device: Any, tmp_path: Path
) -> None:
    dev: Path = loop_device(256)
    suite = _suite(tmp_path, ONE_STATE)
    argv = (f"--dut={dev}", f"--ssd-confirm={dev}", "--ssd-profile=quick")
    first = run_ssd(*argv, suite=suite)
    first.result.assert_outcomes(passed=3)
    plan = _plan(first)
    assert plan[0] == f"  destroys all data on {dev} (model unknown, no serial)", plan
    assert any(line.startswith("  measurements: 3 test(s) not timed on this") for line in plan)
    steps = next(line for line in plan if line.startswith("  steps:"))  # no rate guessed
    assert steps.endswith(
        "written, 64.0 MiB discarded at the drive's speed and 1 purge(s) not timed on it yet"
        " (steady state not estimated)"
    ), steps
    assert "Traceback" not in first.result.stdout.str() + first.result.stderr.str()

    again = run_ssd(*argv, "--collect-only", suite=suite)  # the plan only: nothing runs
    plan = _plan(again)
    timed = next(line for line in plan if line.startswith("  measurements:"))
    assert re.fullmatch(
        r"  measurements: about \d+ s for 3 of 3 test\(s\) \(as timed in earlier runs\)", timed
    ), timed
    total = next(line for line in plan if line.startswith("  in all:"))
    assert re.fullmatch(r"  in all: about [\d.]+ (s|min|h)", total), total
    assert plan[0] == f"  destroys all data on {dev} (model unknown, no serial)", plan


def test_a_scratch_plan_destroys_nothing_of_yours(run_ssd: Any, tmp_path: Path) -> None:
    run = run_ssd("--dut=scratch:256M", "--collect-only", suite=_suite(tmp_path, ONE_STATE))
    plan = _plan(run)
    assert plan and not any("destroys" in line for line in plan), plan


#: a sweep declaring its points' jobs: two time-based (1 s ramp + 1 s run), one by amount
POINTS = """
import pytest
from pytest_ssd.fio.job import FioJob


def points(profile):
    return [pytest.param(n, id=f"p{n}", marks=pytest.mark.dut_state("fob")) for n in range(3)]


def jobs_of(ssd, n):
    r = ssd.region("device")
    if n == 2:
        return [FioJob.on(r, name="p2", pattern="seq", block_size=1 << 20, io_bytes=8 << 20)]
    return [FioJob.on(r, name=f"p{n}", pattern="rnd", block_size=4096, runtime_s=1, ramp_s=1)]


@pytest.mark.ssd_points("n", points, jobs=jobs_of)
def test_point(ssd, n):
    ssd.run_jobs(*jobs_of(ssd, n))
"""


def test_a_first_run_totals_the_measurements_from_the_jobs_they_declare(
    run_ssd: Any, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, POINTS)
    first = run_ssd("--dut=scratch:256M", "--ssd-repeat=2", suite=suite)  # a fresh state dir
    out = first.result.stdout.str() + first.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    first.result.assert_outcomes(passed=3)
    plan = _plan(first)
    moved = "plus 16.0 MiB read at the drive's speed"  # 8 MiB, twice
    assert f"  measurements: about 8 s {moved} for 3 of 3 test(s) (from their fio jobs)" in plan
    assert f"  in all: about 8 s {moved}" in plan, plan  # scratch starts fob: no steps

    again = run_ssd("--dut=scratch:256M", "--ssd-repeat=2", "--collect-only", suite=suite)
    timed = next(line for line in _plan(again) if line.startswith("  measurements:"))
    assert timed.endswith("for 3 of 3 test(s) (as timed in earlier runs)"), timed


def test_a_first_csd_plan_totals_every_test_from_the_jobs_its_body_runs(run_ssd: Any) -> None:
    """suites/csd (quick) on a new drive: each test declares the builder its body runs its
    jobs from (``ssd_points(jobs=)`` or ``ssd_jobs(jobs=)``), so the plan counts them all."""
    argv = ("--dut=scratch:4G", "--ssd-profile=quick", "--collect-only")
    run = run_ssd(*argv, suite=REPO / "suites" / "csd")
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    plan = _plan(run)
    measurements = next(line for line in plan if line.startswith("  measurements:"))
    found = re.fullmatch(
        r"  measurements: about \d+ s plus [\d.]+ GiB written, [\d.]+ GiB read at the drive's "
        r"speed for (\d+) of (\d+) test\(s\) \(from their fio jobs\)",
        measurements,
    )
    assert found is not None and found[1] == found[2], measurements
    total = next(line for line in plan if line.startswith("  in all:"))
    assert "not estimated" not in total, total


def test_a_first_esd_plan_times_every_point_and_the_qos_leaving_only_preconditioning(
    run_ssd: Any,
) -> None:
    """esd's points and QoS run time-based jobs: a first plan has their time; the two
    preconditioning tests run to steady state, of a length nobody knows beforehand."""
    run = run_ssd("--dut=scratch:4G", "--collect-only", suite=REPO / "suites" / "esd")
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    measurements = next(line for line in _plan(run) if line.startswith("  measurements:"))
    found = re.fullmatch(
        r"  measurements: about [\d.]+ (s|min) for (\d+) of (\d+) test\(s\) "
        r"\(from their fio jobs; 2 not timed yet and declaring no jobs\)",
        measurements,
    )
    assert found is not None and int(found[3]) - int(found[2]) == 2, measurements


WRONGLY_DECLARED = """
import pytest


def jobs_of(ssd):
    return []


@pytest.mark.ssd_jobs.with_args(jobs_of)
@pytest.mark.dut_state("cssd")
def test_x(ssd):
    pass
"""


def test_jobs_declared_without_jobs_are_refused_in_one_line(run_ssd: Any, tmp_path: Path) -> None:
    run = run_ssd("--dut=scratch:256M", "--collect-only", suite=_suite(tmp_path, WRONGLY_DECLARED))
    assert run.result.ret == 4
    err = run.result.stderr.str()
    assert "Traceback" not in err + run.result.stdout.str(), err
    refusal = [line for line in err.splitlines() if line.strip()]
    assert refusal == [
        "ERROR: test_states.py::test_x[scratch]: @pytest.mark.ssd_jobs takes (jobs=jobs_function)"
    ], err


def test_a_smoke_plan_names_the_drive_it_destroys_and_times_the_corners(
    run_ssd: Any, loop_device: Any
) -> None:
    """smoke asks for no device state, yet it writes the drive: its plan (``--collect-only``:
    nothing runs) says whose data goes and the corners' time from their jobs (quick profile:
    4 × 4 s, and the prefill of the span the read corners measure)."""
    dev: Path = loop_device(256)
    argv = (f"--dut={dev}", f"--ssd-confirm={dev}", "--collect-only")
    run = run_ssd(*argv, suite=REPO / "suites" / "smoke")
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert _plan(run) == [
        f"  destroys all data on {dev} (model unknown, no serial)",
        "  4 test(s), no device state asked",
        "  measurements: about 16 s plus 512.0 MiB written at the drive's speed for 4 of 4"
        " test(s) (from their fio jobs)",
    ]


def test_under_xdist_the_header_names_the_drive_it_destroys(run_ssd: Any, loop_device: Any) -> None:
    """``-n N``: the controller collects nothing and prints no plan, so whose data goes is
    said in the header, under the device."""
    dev: Path = loop_device(256)
    argv = (f"--dut={dev}", f"--ssd-confirm={dev}", "-n", "1", "-k", "seq-write")
    run = run_ssd(*argv, suite=REPO / "suites" / "smoke")
    run.result.assert_outcomes(passed=1)
    out = run.result.stdout.str()
    assert f"  {dev.name}: destroys all data on {dev} (model unknown, no serial)" in out, out
    assert "pytest-ssd plan" not in out


def test_two_drives_take_turns_test_by_test(run_ssd: Any) -> None:
    """Without -n, the devices' tests of one state alternate (A B A B): two drives (two
    builds) meet the host's drift alike, as a comparison of them needs."""
    run = run_ssd("--dut=scratch:128M", "--dut=scratch:128M", "--collect-only", "-q")
    ids = re.findall(r"test_four_corners\[([^\]]+)\]", run.result.stdout.str())
    assert ["scratch-2" if i.startswith("scratch-2-") else "scratch" for i in ids] == [
        "scratch",
        "scratch-2",
    ] * 4, ids
    assert [i.removeprefix("scratch-2-").removeprefix("scratch-") for i in ids[::2]] == [
        "seq-read",
        "seq-write",
        "rnd-read",
        "rnd-write",
    ]
