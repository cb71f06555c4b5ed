"""A path handed to pytest-ssd that is not a regular file is one line, never a hang.

A FIFO's ``open()`` waits for a writer forever (Ctrl-C does not end it): every file the
tool reads is looked at before it is opened (``pytest_ssd.documents.read_bounded``). Each
run here has a timeout far below a hang's; a FIFO left unread shows it was never opened.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import EXIT_USAGE
from tests.cli import run_cli
from tests.e2e.test_safety_extensions import _earlier_run, _one_error
from tests.unit.db_fixtures import write_run

FIFO = "a FIFO (named pipe), not a regular file"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "inputs" / "sheet.toml"
    path.parent.mkdir()
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("--datasheet={}", "ERROR: {}: file: cannot read: " + FIFO),
        ("--datasheet-dir={.parent}", "ERROR: {}: file: cannot read: " + FIFO),
        ("--ssd-health-profile={}", "ERROR: --ssd-health-profile: {}: file: cannot read: " + FIFO),
        (
            "--ssd-db={}",
            "ERROR: {}: " + FIFO.replace("regular file", "results database: give a file"),
        ),
        (
            "--ssd-ssh-config={}",
            "ERROR: --ssd-ssh-config={}: a FIFO (named pipe): give an ssh_config file",
        ),
    ],
    ids=["datasheet", "datasheet-dir", "health-profile", "db", "ssh-config"],
)
def test_a_fifo_given_as_a_file_is_one_line(
    run_ssd: Any, tmp_path: Path, fifo: Path, option: str, expected: str
) -> None:
    _earlier_run(tmp_path / "reports")
    run = run_ssd("--dut=scratch:64M", option.format(fifo), timeout=60)
    assert _one_error(run) == expected.format(fifo)


def test_a_fifo_in_the_report_folder_is_passed_over(run_ssd: Any, tmp_path: Path) -> None:
    """The report folder's speeds and test times are read as hints: a FIFO there is none."""
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in (".ssd-speeds.json", ".ssd-test-times.json"):
        os.mkfifo(reports / name)
    run = run_ssd("--dut=scratch:64M", "-k", "rnd-read", timeout=120)
    run.result.assert_outcomes(passed=1)


def test_compare_with_a_fifo_as_its_datasheet_is_one_line(tmp_path: Path, fifo: Path) -> None:
    db = tmp_path / "results.sqlite"
    write_run(db, "20250101-000000-1", "base")
    write_run(db, "20250101-000000-2", "new")
    done = run_cli(
        "--db", str(db), "compare", "base", "new", "--gate", "--datasheet", str(fifo), timeout=60
    )
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    assert done.stderr == f"pytest-ssd: {fifo}: file: cannot read: {FIFO}\n"
