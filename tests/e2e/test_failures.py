"""Failure paths through the real plugin: missing fio, interrupts, unusual targets."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import attached_loops, cssd_suite, digest, smoke_argv

USAGE_ERROR = 4
INTERRUPTED = 2


def _error_line(run: Any) -> str:
    assert run.result.ret == USAGE_ERROR, run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in run.result.stderr.str() + run.result.stdout.str()
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, run.result.errlines
    return errors[0]


def test_missing_fio_is_one_line_with_the_install_hint(
    run_ssd: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # fio lives in /usr/bin; keep only the sbin folders (losetup, wipefs) on PATH
    monkeypatch.setenv("PATH", "/usr/sbin:/sbin")
    run = run_ssd("--dut=scratch:64M")
    line = _error_line(run)
    assert "fio not found on PATH" in line and "apt-get install fio" in line
    assert not list((tmp_path / "reports").glob(".scratch/*.img")), "no scratch was attached"


def test_regular_file_is_benchmarked_in_place_and_kept(run_ssd: Any, tmp_path: Path) -> None:
    target = tmp_path / "bench.img"
    with target.open("wb") as fh:
        fh.truncate(96 << 20)
    run = run_ssd(f"--dut={target}", f"--ssd-confirm={target}", "-k", "rnd")
    run.result.assert_outcomes(passed=2)
    data = run.results()
    (device,) = data["devices"].values()
    assert device["path"] == str(target) and device["scratch"] is False
    assert device["identity"]["size_bytes"] == 96 << 20
    measured = {m["name"]: m["metrics"] for m in data["measurements"]}
    assert measured["rnd-read"]["read"]["iops"] > 0
    assert measured["rnd-write"]["write"]["iops"] > 0
    assert target.stat().st_size == 96 << 20, "the user's file is neither grown nor removed"


def test_regular_file_without_confirmation_is_refused_unchanged(
    run_ssd: Any, tmp_path: Path
) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(bytes(range(256)) * 4096 * 64)  # 64 MiB: the smallest target measured
    before = digest(target)
    line = _error_line(run_ssd(f"--dut={target}"))
    assert f"--ssd-confirm={target}" in line
    assert digest(target) == before


def test_empty_target_is_refused_with_the_reason(run_ssd: Any, tmp_path: Path) -> None:
    target = tmp_path / "empty.img"
    target.touch()
    line = _error_line(run_ssd(f"--dut={target}", f"--ssd-confirm={target}"))
    assert f"{target} has no capacity (0 bytes)" in line and "fallocate" in line
    assert target.stat().st_size == 0


def _wait_for(predicate: Any, proc: subprocess.Popen[str], what: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"pytest ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {limit} s")
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_releases_scratch_and_keeps_measured_results(
    tmp_path: Path, signum: signal.Signals
) -> None:
    reports = tmp_path / "reports"
    # the second test's fio is running once its job file exists: the first test is done
    jobs = reports / "latest" / "artifacts"
    _signalled(
        smoke_argv(reports, "--dut=scratch:128M"),
        tmp_path,
        lambda: len(list(jobs.glob("*/*/fio.job"))) >= 2,
        "the 2nd fio",
        (0.5, signum),
    )
    run_dir = (reports / "latest").resolve()
    data = json.loads((run_dir / "results.json").read_text())
    assert data["run"]["complete"] is False
    assert [m["name"] for m in data["measurements"]] == ["seq-read"], "the finished test is kept"
    assert str(reports) not in attached_loops(), "scratch loop device detached"
    assert not list((reports / ".scratch").glob("*.img")), "backing file removed"
    _no_fio_of(run_dir)


def _signalled(
    argv: list[str], cwd: Path, ready: Any, what: str, *signals: tuple[float, int]
) -> str:
    """Start *argv*, send each (delay, signal) to pytest alone once *ready*; its output
    (it must exit as interrupted)."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # a terminal's pytest hears Ctrl-C, also when these tests run in the background
        # (``&`` starts them ignoring SIGINT, and a child inherits that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    try:
        _wait_for(ready, proc, what)
        for delay, signum in signals:
            time.sleep(delay)
            proc.send_signal(signum)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == INTERRUPTED, out
    return out


def _no_fio_of(run_dir: Path) -> None:
    jobfiles = [str(p) for p in run_dir.glob("artifacts/*/*/fio.job")]
    ps = ["ps", "-eww", "-o", "args"]
    running = subprocess.run(ps, check=False, capture_output=True, text=True, timeout=30)
    assert not [line for line in running.stdout.splitlines() if any(j in line for j in jobfiles)]


def test_ctrl_c_twice_in_a_purge_leaves_the_run_cut_short_in_one_line(
    loop_device: Any, tmp_path: Path
) -> None:
    """The second Ctrl-C landed in pytest's report of the first: pytest went on as if every
    test had run (complete, outcome {}) and printed two tracebacks."""
    dev = loop_device(256)
    reports = tmp_path / "reports"
    argv = smoke_argv(
        reports,
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--ssd-profile=quick",
        suite=cssd_suite(tmp_path),
    )
    purge = reports / "latest" / "states"
    # pytest alone, twice within a second
    twice = ((0.0, signal.SIGINT), (0.3, signal.SIGINT))
    out = _signalled(
        argv, tmp_path, lambda: any(purge.glob("*/01-cssd/01-purge")), "the purge", *twice
    )
    assert "Traceback" not in out, out
    again = [line for line in out.splitlines() if "SIGINT again" in line]
    assert len(again) == 1 and "the run is already stopping" in again[0], out
    run_dir = (reports / "latest").resolve()
    data = json.loads((run_dir / "results.json").read_text())
    assert data["run"]["complete"] is False
    with contextlib.closing(sqlite3.connect(reports / "results.sqlite")) as conn:
        assert conn.execute("SELECT complete FROM runs").fetchall() == [(0,)]
    _no_fio_of(run_dir)
