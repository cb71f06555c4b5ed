"""--ssd-resume continues exactly the run it names, or refuses in one line before any write.

Another profile, selection, suite or measuring option, a run finished on its spool while
the lab's server was away, another file behind the same loop device, a run id with a
newline: each is refused (exit 4, one line naming what differs) with the device, the
database and the report folder as they were.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import main
from pytest_ssd.db.lab import SPOOL_FILE
from pytest_ssd.db.opening import open_reader
from pytest_ssd.db.sync import count_rows
from pytest_ssd.session.resume import PROPERTIES
from tests.e2e.conftest import REPO, digest, smoke_argv
from tests.e2e.test_lab_db import _run_dir, server_lost_mid_run
from tests.e2e.test_resume import (
    CSD,
    _argv,
    _cut_in_transition,
    _in_transition,
    _run,
    _stopped,
    exited,
)
from tests.pgserver import Postgres, local_postgres


def _refusal(argv: list[str]) -> str:
    """The one error line of a refused session (exit 4, no traceback)."""
    done = exited(argv, pytest.ExitCode.USAGE_ERROR)
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, done.stdout + done.stderr
    return errors[0]


def _as_it_was(dev: Path, reports: Path) -> tuple[str, str, list[Path], Path]:
    latest = (reports / "latest").resolve()
    return digest(dev), digest(reports / "results.sqlite"), sorted(reports.rglob("*")), latest


def test_a_resume_with_other_tests_or_options_is_refused_and_the_same_one_resumes(
    loop_device: Any, tmp_path: Path
) -> None:
    dev, reports = _cut_in_transition(loop_device, tmp_path)
    run_id = (reports / "latest").resolve().name
    before = _as_it_was(dev, reports)
    esd = (str(REPO / "suites" / "esd"), *CSD[1:])
    other = {  # (first one a quick run: before, it was resumed)
        "--ssd-repeat 2 here, 1 in run": ("--ssd-repeat=2",),
        "--ssd-profile full here, quick in run": ("--ssd-profile=full",),
        "-k fob-default-seq1m here, 'fob-default-seq1m or seq-cssd1-qd1 or seq-cssd1-qd2'": (
            "-k",
            "fob-default-seq1m",
        ),
        "--ssd-idle after-purge=5 here, none in run": ("--ssd-idle=after-purge=5",),
        "--ssd-purge discard here, none in run": ("--ssd-purge=discard",),
        "--ssd-build B here, none in run": ("--ssd-build=B",),  # a resume keeps its build
    }
    for said, args in other.items():
        line = _refusal(_argv(dev, reports, "--ssd-resume=last", *args))
        assert f"--ssd-resume=last: this session is not the run it resumes: {said}" in line
        assert run_id in line and "start a new run" in line
    line = _refusal(_argv(dev, reports, "--ssd-resume=last", suite=esd))
    assert f"tests {REPO}/suites/esd here, {REPO}/suites/csd in run {run_id}" in line, line
    assert _as_it_was(dev, reports) == before
    # a run recorded before runs kept their shape: read from its command line (argv)
    with contextlib.closing(sqlite3.connect(reports / "results.sqlite")) as conn, conn:
        environment = json.loads(conn.execute("SELECT environment FROM runs").fetchone()[0])
        assert environment.pop("shape")["--ssd-profile"] == "quick"
        conn.execute("UPDATE runs SET environment = ?", (json.dumps(environment),))
    line = _refusal(_argv(dev, reports, "--ssd-resume=last", "--ssd-profile=full"))
    assert f"--ssd-profile full here, quick in run {run_id}" in line, line
    # the same run, its options spelled otherwise: the same values, so it resumes
    csd = (CSD[0] + "/", CSD[1], "fob-default-seq1m  or seq-cssd1-qd1 or seq-cssd1-qd2")
    resumed = _run(dev, reports, "--ssd-resume=last", "--ssd-repeat=01", suite=csd)
    assert f"resuming run {run_id}" in resumed.output and resumed.complete == 1
    assert len(resumed.outcomes) == 10 and max(resumed.measurements.values()) == 3


def test_a_file_replaced_at_the_same_path_is_another_drive(tmp_path: Path) -> None:
    """A file as the device (as behind a loop device): the same path, size and kind; only
    its inode tells it from the file the run measured."""
    drive = tmp_path / "drive.img"
    with drive.open("wb") as fh:
        fh.truncate(256 << 20)
    reports = tmp_path / "reports"
    _stopped(drive, reports, _in_transition(reports), signal.SIGKILL)
    shutil.copyfile(drive, tmp_path / "copy.img")
    with (tmp_path / "copy.img").open("r+b") as fh:
        fh.write(os.urandom(1 << 20))
    (tmp_path / "copy.img").replace(drive)
    before = _as_it_was(drive, reports)
    line = _refusal(_argv(drive, reports, "--ssd-resume=last"))
    assert "drive.img is not the drive run" in line and "(device:inode)" in line, line
    assert _as_it_was(drive, reports) == before


def test_a_run_id_with_a_newline_is_not_a_run_id(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    argv = smoke_argv(reports, "--ssd-resume=20261126-085216-489e77af5081\n")
    said = exited(argv, pytest.ExitCode.USAGE_ERROR).stderr
    assert "--ssd-resume='20261126-085216-489e77af5081\\n' is neither a run id" in said, said
    assert not reports.exists()


def test_a_run_finished_on_its_spool_while_the_server_was_away_is_not_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was: every test ran again, and the spool held each measurement twice.  Then
    ``pytest-ssd sync RUN-ID`` finds the run's folder (made with --ssd-report-dir elsewhere)
    where the server's record of the run says it is."""
    with local_postgres() as own:  # a server of this test's alone: it is stopped mid-run
        _finished_while_away(own, tmp_path, capsys, monkeypatch)


def _finished_while_away(
    own_server: Postgres,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lab = own_server.create_database("lab")
    reports = tmp_path / "reports"
    run_dir = _run_dir(server_lost_mid_run(own_server, lab, reports))
    own_server.start()
    files = sorted(reports.rglob("*"))
    spool = run_dir / SPOOL_FILE
    before = digest(spool)
    argv = smoke_argv(reports, "--ssd-profile=quick", f"--ssd-db={lab}", "--dut=scratch:256M")
    line = _refusal([*argv, "--ssd-resume=last"])
    assert f"run {run_dir.name} finished (its spool {spool} says so" in line, line
    assert f"'pytest-ssd sync {run_dir} --db=" in line and "start a new run" in line
    assert sorted(reports.rglob("*")) == files and digest(spool) == before
    # synced by its id from another folder: the server holds the spool's rows, each once
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # no reports/ here
    assert main(["sync", run_dir.name, "--db", lab]) == 0, capsys.readouterr().err
    assert re.search(r": [1-9]\d* rows added", capsys.readouterr().out)
    assert main(["sync", "20261126-085216-489e77af5081", "--db", lab]) != 0
    said = capsys.readouterr().err.strip()
    assert "has no record of its folder" in said and "--ssd-report-dir" in said, said
    assert len(said.splitlines()) == 1
    server, local = open_reader(lab), open_reader(spool)
    try:
        assert count_rows(server, run_dir.name) == count_rows(local, run_dir.name)
        per_test = "SELECT test, count(*) FROM measurements GROUP BY test"
        assert {n for _, n in server.execute(per_test).fetchall()} == {1}
        assert server.execute("SELECT complete FROM runs").fetchall() == [(1,)]
    finally:
        server.close()
        local.close()
    line = _refusal([*argv, "--ssd-resume=last"])  # now finished on the server too
    assert "finished" in line and "only a run cut short can be resumed" in line


def test_a_fifo_among_the_run_folders_records_is_one_line_not_a_hang(tmp_path: Path) -> None:
    drive = tmp_path / "drive.img"
    with drive.open("wb") as fh:
        fh.truncate(256 << 20)
    reports = tmp_path / "reports"
    _stopped(drive, reports, _in_transition(reports), signal.SIGKILL)
    properties = (reports / "latest").resolve() / PROPERTIES
    properties.unlink(missing_ok=True)
    os.mkfifo(properties)  # its open would wait for a writer forever
    before = _as_it_was(drive, reports)
    line = _refusal(_argv(drive, reports, "--ssd-resume=last"))
    assert f"cannot read {properties}: a FIFO (named pipe), not a regular file" in line, line
    assert _as_it_was(drive, reports) == before
