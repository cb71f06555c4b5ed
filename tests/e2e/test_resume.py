"""--ssd-resume end to end: suites/csd (quick) on a loop device, cut short and resumed.

A run is stopped at a moment (kill -9 during a state transition, during a batched
point, while the report is built; SIGTERM as CI cancels), then resumed with
``--ssd-resume=last``: it must end as an uninterrupted run of the same tests ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import shared_test_id
from tests.e2e.conftest import REPO, SMOKE, attached_loops, digest, kill_everything_of, pids_naming

#: 4 points in fob, then cssd (a transition) and 6 low-QD points started as one batch
CSD = (str(REPO / "suites" / "csd"), "-k", "fob-default-seq1m or seq-cssd1-qd1 or seq-cssd1-qd2")
TESTS = 10
#: the SEQ preconditioning (it leaves the SEQ steady state), then 12 SEQ read points in it
ESD = (
    str(REPO / "suites" / "esd"),
    "-k",
    "seq_preconditioning or seq_by_block_size and read",
    "--dut-class=essd-ri",
)
#: what an uninterrupted run (and a resumed one) must not print
BROKEN = ("INTERNALERROR", "Traceback")


@dataclass
class Ended:
    """What a run left: its outcome by test, its rows by test, and its wall time."""

    run_ids: list[str]
    outcomes: dict[str, str]
    measurements: Counter[str]
    #: (test, target) of each recorded transition
    transitions: list[tuple[str, str]]
    complete: int
    seconds: float
    output: str


def _argv(dev: Path | str, reports: Path, *args: str, suite: tuple[str, ...] = CSD) -> list[str]:
    """The run's command line; *dev* a device (confirmed), or ``scratch:SIZE``."""
    confirm = [f"--ssd-confirm={dev}"] if isinstance(dev, Path) else []
    return [
        sys.executable,
        "-m",
        "pytest",
        *suite,
        f"--dut={dev}",
        *confirm,
        "--ssd-profile=quick",
        "-p",
        "no:cacheprovider",
        f"--ssd-report-dir={reports}",
        f"--rootdir={REPO}",
        *args,
    ]


def _ended(reports: Path, seconds: float, output: str) -> Ended:
    with contextlib.closing(sqlite3.connect(reports / "results.sqlite")) as conn:
        runs = [row[0] for row in conn.execute("SELECT id FROM runs")]
        # the one device's tests, whatever the -n of the runs that recorded them
        dut = conn.execute("SELECT dut_id FROM run_devices").fetchone()[0]
        outcomes = {
            shared_test_id(n, dut): o for n, o in conn.execute("SELECT nodeid, outcome FROM tests")
        }
        found = conn.execute("SELECT test FROM measurements")
        tests = Counter(shared_test_id(row[0], dut) for row in found)
        moves = [
            (shared_test_id(test, dut), target)
            for test, target in conn.execute("SELECT test, target FROM transitions ORDER BY seq")
        ]
        complete = conn.execute("SELECT max(complete) FROM runs").fetchone()[0]
    return Ended(runs, outcomes, tests, moves, complete, seconds, output)


def exited(argv: list[str], code: int) -> subprocess.CompletedProcess[str]:
    """Run *argv* to its end: it must exit with *code*, no traceback in what it printed."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == code, output
    assert not any(word in output for word in BROKEN), output
    return done


def _run(dev: Path | str, reports: Path, *args: str, suite: tuple[str, ...] = CSD) -> Ended:
    started = time.monotonic()
    done = exited(_argv(dev, reports, *args, suite=suite), pytest.ExitCode.OK)
    return _ended(reports, time.monotonic() - started, done.stdout + done.stderr)


def _rows(reports: Path, sql: str) -> int:
    with contextlib.suppress(sqlite3.Error), sqlite3.connect(reports / "results.sqlite") as conn:
        return int(conn.execute(sql).fetchone()[0])
    return 0


def _stopped(
    dev: Path | str,
    reports: Path,
    ready: Callable[[Path], bool],
    signum: int,
    *args: str,
    suite: tuple[str, ...] = CSD,
) -> str:
    """Start a run, send *signum* once *ready* (the log's path) says so; the run's output."""
    reports.mkdir(parents=True, exist_ok=True)
    log = reports / f"stopped-{time.monotonic_ns()}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            _argv(dev, reports, *args, suite=suite),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 600
        while not ready(log) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be stopped:\n" + log.read_text()
        if signum == signal.SIGKILL:
            _killpg(proc.pid)  # pytest and what it started in its group, no clean-up
        else:
            proc.send_signal(signum)  # pytest alone, as CI cancels a job
            proc.wait(timeout=120)
    finally:
        kill_everything_of(reports)  # a fio left by kill -9, in a session of its own
        _killpg(proc.pid)
        proc.wait(timeout=30)
    return log.read_text()


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _in_transition(reports: Path) -> Callable[[Path], bool]:
    """The transition to cssd has begun (a step's folder) and not ended (no transition.json)."""

    def ready(log: Path) -> bool:
        found = list(reports.glob("*/states/*/02-cssd"))
        return bool(found) and not (found[0] / "transition.json").exists()

    return ready


def _low_qd_recorded(reports: Path, points: int = 2) -> Callable[[Path], bool]:
    """*points* low-QD points recorded (two: the batch runs the third)."""
    sql = "SELECT count(*) FROM tests WHERE nodeid LIKE '%test_low_qd%'"
    return lambda log: _rows(reports, sql) >= points


def _measuring_after_transition(reports: Path) -> Callable[[Path], bool]:
    """The transition to cssd is recorded (on the first low-QD point), that point not yet."""
    moved = "SELECT count(*) FROM transitions WHERE target = 'cssd'"
    return lambda log: _rows(reports, moved) >= 1


def _in_report(log: Path) -> bool:
    return "pytest-ssd: report:" in log.read_text()


def _refused(dev: Path, reports: Path) -> list[str]:
    """The error lines of a resume of the last run refused (exit 4, no traceback)."""
    done = exited(_argv(dev, reports, "--ssd-resume=last"), pytest.ExitCode.USAGE_ERROR)
    return [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]


def _declared(nodeid: str) -> str:
    if "by_block_size" in nodeid:
        return "ss(seq-128k-write-qd256)"
    return "cssd" if "cssd" in nodeid else "fob"


def _same_as(resumed: Ended, reference: Ended) -> None:
    assert len(resumed.run_ids) == 1, resumed.run_ids  # one run: the same id, resumed
    assert sorted(resumed.outcomes.items()) == sorted(reference.outcomes.items())
    # each point once: as many measurements per test as the uninterrupted run has
    assert resumed.measurements == reference.measurements
    assert all(target == _declared(test) for test, target in resumed.transitions), resumed
    assert max(Counter(test for test, _ in resumed.transitions).values()) == 1, resumed
    assert resumed.complete == 1


def _said(moment: str, resumed: Ended, reference: Ended) -> str:
    return (
        f"resumed after {moment}: {resumed.seconds:.1f} s"
        f" vs {reference.seconds:.1f} s uninterrupted"
    )


def _plan(output: str) -> list[str]:
    """The resumed run's plan lines on each state group (kept, redone, to run)."""
    found = (re.match(r"  loop\d+ (fob|cssd) +(.*)", line) for line in output.splitlines())
    return [match[2] for match in found if match]


@dataclass(frozen=True)
class Moment:
    """Where a run is stopped, and what the resumed run's plan says of its fob and cssd groups
    (the start of each line, or of one of them)."""

    name: str
    when: Callable[[Path], Callable[[Path], bool]]
    signum: int
    plan: tuple[Any, Any]
    #: the resumed run's own options
    args: tuple[str, ...] = ()
    #: the options of the run cut short
    cut_args: tuple[str, ...] = ()


BATCH_CUT = ("kept: all 4 test(s) finished", "redone: cut short after ")
MOMENTS = (
    Moment(
        "kill -9 during the transition to cssd",
        _in_transition,
        signal.SIGKILL,
        ("kept: all 4 test(s) finished", "to run: 6 test(s)"),
    ),
    Moment("kill -9 during a batched low-QD point", _low_qd_recorded, signal.SIGKILL, BATCH_CUT),
    Moment(
        "kill -9 as the first low-QD point measures, its transition recorded",
        _measuring_after_transition,
        signal.SIGKILL,
        # (a point that ended before the kill landed makes the group one cut short)
        ("kept: all 4 test(s) finished", ("to run: 6 test(s)", "redone: cut short after 1 ")),
    ),
    Moment(
        "kill -9 while the report is built",
        lambda reports: _in_report,
        signal.SIGKILL,
        ("kept: all 4 test(s) finished", "kept: all 6 test(s) finished"),
    ),
    Moment("SIGTERM during a batched low-QD point", _low_qd_recorded, signal.SIGTERM, BATCH_CUT),
    # the controller does not collect under -n: no plan, the header says what is kept
    Moment(
        "kill -9 during a batched low-QD point, resumed with -n 2",
        _low_qd_recorded,
        signal.SIGKILL,
        BATCH_CUT,
        ("-n", "2"),
    ),
    # and the other way: the tests a run under -n recorded (its ids end in the device's
    # xdist group) are kept by a resumed run without workers
    Moment(
        "kill -9 under -n 2 during a batched low-QD point, resumed without -n",
        _low_qd_recorded,
        signal.SIGKILL,
        BATCH_CUT,
        cut_args=("-n", "2"),
    ),
)


def _check_plan(moment: Moment, resumed: Ended) -> None:
    lines = _plan(resumed.output)
    if "-n" in moment.args:
        assert lines == [] and "test(s) it finished are kept" in resumed.output, resumed.output
        return
    found = [line.startswith(words) for line, words in zip(lines, moment.plan, strict=True)]
    assert found == [True, True], (moment.name, lines)
    if "redone" in lines[1]:
        assert "cannot prove the device's state" in resumed.output


@pytest.fixture(scope="module")
def reference(module_loop_device: Any, tmp_path_factory: pytest.TempPathFactory) -> Ended:
    """The uninterrupted run every moment's resumed run must end as (once per worker: the
    test ids and the records compare across devices)."""
    ended = _run(module_loop_device(256), tmp_path_factory.mktemp("reference"))
    assert len(ended.outcomes) == TESTS and set(ended.outcomes.values()) == {"passed"}
    return ended


@pytest.mark.parametrize("moment", MOMENTS, ids=[m.name for m in MOMENTS])
def test_a_run_cut_short_at_any_moment_resumes_to_what_an_uninterrupted_run_records(
    reference: Ended,
    moment: Moment,
    loop_device: Any,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    dev = loop_device(256)
    reports = tmp_path / "cut"
    _stopped(dev, reports, moment.when(reports), moment.signum, *moment.cut_args)
    cut = _ended(reports, 0.0, "")
    assert cut.complete == 0 or moment.name.endswith("built"), moment.name
    resumed = _run(dev, reports, "--ssd-resume=last", *moment.args)
    assert f"resuming run {cut.run_ids[0]}" in resumed.output, resumed.output
    _check_plan(moment, resumed)
    _same_as(resumed, reference)
    if "redone" in moment.plan[1]:  # the cut group's state is reached again from a purge
        assert any(target == "cssd" for _, target in resumed.transitions[1:])
    assert pids_naming(tmp_path) == []  # no fio of a killed run left behind
    # shown by -rP (also under -n) or -s, and kept in --junitxml
    said = f"uninterrupted run: {reference.seconds:.1f} s; {_said(moment.name, resumed, reference)}"
    print(said)
    record_property("wall_times", said)


def _cut_in_transition(loop_device: Any, tmp_path: Path) -> tuple[Path, Path]:
    """A loop device and a report folder whose run was killed in its transition to cssd."""
    dev: Path = loop_device(256)
    reports = tmp_path / "reports"
    _stopped(dev, reports, _in_transition(reports), signal.SIGKILL)
    return dev, reports


def test_a_run_resumes_several_times_and_once_finished_no_more(
    loop_device: Any, tmp_path: Path
) -> None:
    dev, reports = _cut_in_transition(loop_device, tmp_path)
    # the resumed run is cut short in its turn, once it recorded a low-QD point
    _stopped(dev, reports, _low_qd_recorded(reports, 1), signal.SIGKILL, "--ssd-resume=last")
    resumed = _run(dev, reports, "--ssd-resume=last")
    assert len(resumed.run_ids) == 1 and len(resumed.outcomes) == TESTS
    assert set(resumed.outcomes.values()) == {"passed"} and resumed.complete == 1
    assert all(target == _declared(test) for test, target in resumed.transitions)
    assert max(resumed.measurements.values()) == 3, resumed.measurements  # each point once
    errors = _refused(dev, reports)
    assert errors == [
        f"ERROR: --ssd-resume=last: run {resumed.run_ids[0]} finished"
        + errors[0].split("finished", 1)[1]
    ]
    assert "only a run cut short can be resumed" in errors[0]


def test_a_resume_on_another_drive_is_refused_before_any_write(
    loop_device: Any, tmp_path: Path
) -> None:
    dev, reports = _cut_in_transition(loop_device, tmp_path)
    # another drive behind the same device: its capacity grew, and it holds data of its own
    os.truncate(tmp_path / "0-backing.img", 320 << 20)
    subprocess.run(["losetup", "--set-capacity", str(dev)], check=True, timeout=30)
    with dev.open("r+b") as fh:
        fh.write(os.urandom(1 << 20))
    other = loop_device(256)  # and a device the run never measured
    before = [digest(dev), digest(other), digest(reports / "results.sqlite")]
    files = sorted(reports.rglob("*"))
    grown = _refused(dev, reports)
    assert len(grown) == 1 and "is not the drive run" in grown[0], grown
    assert "256.0 MiB" in grown[0] and "320.0 MiB" in grown[0], grown
    elsewhere = _refused(other, reports)
    assert len(elsewhere) == 1 and f"this session {other.name}:" in elsewhere[0], elsewhere
    assert [digest(dev), digest(other), digest(reports / "results.sqlite")] == before
    assert sorted(reports.rglob("*")) == files


def test_esd_cut_mid_sweep_resumes_after_reaching_the_sweeps_steady_state_again(
    loop_device: Any, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    dev = loop_device(1024)
    reference = _run(dev, tmp_path / "reference", suite=ESD)
    assert len(reference.outcomes) == 13 and set(reference.outcomes.values()) == {"passed"}
    reports = tmp_path / "cut"
    sql = "SELECT count(*) FROM tests WHERE nodeid LIKE '%by_block_size%'"
    _stopped(dev, reports, lambda log: _rows(reports, sql) >= 4, signal.SIGKILL, suite=ESD)
    resumed = _run(dev, reports, "--ssd-resume=last", suite=ESD)
    # the preconditioning test is kept; the sweep's state is reached again by the keeper
    assert "fob        kept: all 1 test(s) finished" in resumed.output, resumed.output
    assert "ss(seq-128k-write-qd256) redone: cut short after " in resumed.output
    _same_as(resumed, reference)
    assert [target for _, target in resumed.transitions][-1] == "ss(seq-128k-write-qd256)"
    said = _said("kill -9 mid-sweep (suites/esd)", resumed, reference)
    print(said)
    record_property("wall_times", said)


def test_a_scratch_device_is_made_anew_and_its_states_reached_again(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    corners = (str(SMOKE),)
    recorded = "SELECT count(*) FROM tests"
    _stopped(
        "scratch:512M",
        reports,
        lambda log: _rows(reports, recorded) >= 1,
        signal.SIGKILL,
        suite=corners,
    )
    resumed = _run("scratch:512M", reports, "--ssd-resume=last", suite=corners)
    assert "scratch: a scratch device is made anew" in resumed.output, resumed.output
    assert len(resumed.run_ids) == 1 and resumed.complete == 1
    assert (
        resumed.outcomes == dict.fromkeys(resumed.outcomes, "passed") and len(resumed.outcomes) == 4
    )
    assert set(resumed.measurements.values()) == {1}, resumed.measurements  # each corner once
    assert str(reports) not in attached_loops()  # the killed run's scratch device went too
