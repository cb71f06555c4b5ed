"""The results database end to end: labelled runs compared, a killed run, the CLI on real data."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ssd.cli import main
from pytest_ssd.device.scratch import sweep_stale
from tests.cli import run_cli
from tests.e2e.conftest import REPO, SMOKE, attached_loops, kill_everything_of


def test_a_second_drive_is_compared_with_the_first(run_ssd, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = run_ssd("--dut=scratch:512M", "--dut-label=drive one")
    assert first.result.ret == 0, first.result.stdout.str()
    second = run_ssd("--dut=scratch:512M", "--dut-label=drive two", "--ssd-compare=drive one")
    assert second.result.ret == 0, second.result.stdout.str()
    page = (second.run_dir / "report.html").read_text()
    suite = page[page.index('id="ssd-suite-smoke"') :]
    for label in ("drive one", "drive two"):
        assert suite.count(f"<td>{label}</td>") == 4, label  # every corner of both drives
    assert "compared" in page[page.index('id="ssd-devices"') :]
    # seed 004's two-device comparison: ratio per workload and the rank correlation
    pair = page[page.index('id="ssd-pair"') : page.index('id="ssd-suite-smoke"')]
    assert "Two-device comparison: drive two and drive one" in pair
    assert pair.count("<td>SEQ 128KiB") == 2 and "Spearman rho" in pair
    assert {p.suffix for p in (second.run_dir / "figures").iterdir()} == {".png", ".svg"}

    db = second.report_dir / "results.sqlite"
    out = tmp_path / "all.csv"
    assert main(["--db", str(db), "export", "-o", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["label"] for r in rows} == {"drive one", "drive two"} and len(rows) == 8
    assert all(float(r["iops"]) > 0 and r["direction"] in ("read", "write") for r in rows)


def _measurements(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM measurements").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_kill_9_keeps_what_was_measured_and_the_report_rebuilds(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    db = reports / "results.sqlite"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(SMOKE),
        f"--ssd-report-dir={reports}",
        "--dut=scratch:512M",
        "--ssd-profile=quick",
        "-p",
        "no:cacheprovider",
        f"--rootdir={REPO}",
    ]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while _measurements(db) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)  # pytest and what it started in its group
    finally:
        kill_everything_of(reports)  # the fio it started in a session of its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        sweep_stale(reports / ".scratch")
    assert str(reports) not in attached_loops()

    with sqlite3.connect(db) as conn:
        run_id, complete, end = conn.execute("SELECT id, complete, end FROM runs").fetchone()
        kept = conn.execute("SELECT count(*) FROM measurements").fetchone()[0]
    assert (complete, end) == (0, None) and 1 <= kept < 4, (complete, end, kept)

    out = tmp_path / "rebuilt.html"
    assert main(["--db", str(db), "report", run_id, "-o", str(out)]) == 0
    page = out.read_text()
    assert 'id="ssd-suite-smoke"' in page and "never: the run was cut short" in page
    assert page.count("<td>scratch 512.0 MiB</td>") == kept


def test_the_ini_report_dir_is_where_runs_go_and_where_pytest_ssd_looks(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # a lab's project: pytest.ini names the report folder; pytest-ssd is run from below it
    lab = tmp_path / "lab"
    (lab / "notes").mkdir(parents=True)
    (lab / "pytest.ini").write_text("[pytest]\nssd_report_dir = runs/ssd\n")
    result = pytester.runpytest_subprocess(
        str(SMOKE),
        "-c",
        str(lab / "pytest.ini"),
        f"--rootdir={REPO}",
        "-p",
        "no:cacheprovider",
        "--ssd-profile=quick",
        "-k",
        "seq",
        timeout=300,
    )
    assert result.ret == 0, result.stdout.str()
    assert (lab / "runs" / "ssd" / "results.sqlite").is_file()
    listed = run_cli("list", cwd=lab / "notes", timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "scratch" in listed.stdout and " yes " in listed.stdout
