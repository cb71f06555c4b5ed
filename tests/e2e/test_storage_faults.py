"""Storage faults through the real plugin: one line, the run stopped cleanly, nothing lost.

A filesystem fills *during* a run: the run is given a small tmpfs and a plugin
(``-p fill_after_first``, written beside the run) that fills it to the last page
once the first test is done, so the fault comes at the same point every time.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import run_cli
from tests.e2e.conftest import attached_loops
from tests.unit.db_fixtures import corrupt_page, foreign_db, remount, sha256, tmpfs

USAGE_ERROR = 4
INTERRUPTED = 2
CLI_DB, CLI_OUTPUT = 3, 4

FILL_PLUGIN = '''
"""Fill the folder $SSD_FILL to its last page once the first test has finished."""
import os

_done = []


def pytest_runtest_logfinish(nodeid, location):
    if _done:
        return
    _done.append(nodeid)
    fd = os.open(os.path.join(os.environ["SSD_FILL"], "filler"), os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\\0" * 4096)
    except OSError:  # ENOSPC: full
        pass
    finally:
        os.close(fd)
'''


@pytest.fixture
def fill_after_first(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``fill_after_first(folder)``: the -p arguments that fill *folder* after the first test."""
    pytester.makepyfile(fill_after_first=FILL_PLUGIN)

    def arm(folder: Path) -> tuple[str, str]:
        monkeypatch.setenv("SSD_FILL", str(folder))
        return "-p", "fill_after_first"

    return arm


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs: enough for a run to start, its database and its first test."""
    with tmpfs(tmp_path / "small", "2m") as mnt:
        yield mnt


def _lines(run: Any) -> tuple[str, str]:
    out, err = run.result.stdout.str(), run.result.stderr.str()
    assert "INTERNALERROR" not in out + err and "Traceback" not in out + err, out + err
    return out, err


def _usage_error(run: Any) -> str:
    """The one ERROR line of a run refused before its first test (exit 4)."""
    _, err = _lines(run)
    assert run.result.ret == USAGE_ERROR, run.result.stdout.str() + err
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, run.result.errlines
    return errors[0]


def _stopped(run: Any) -> str:
    """The one line of a run stopped mid-way by a storage fault (exit 2, interrupted)."""
    out, _ = _lines(run)
    assert run.result.ret == INTERRUPTED, out
    stops = [line for line in run.result.outlines if "pytest-ssd stopped the run:" in line]
    assert len(stops) == 1, out
    return stops[0].strip("! ")


def _no_loop_left(tmp_path: Path, state_dir: Path, keep: tuple[Path, ...] = ()) -> None:
    """No loop device of this run is attached (a fixture's own loop device aside)."""
    mine = [
        line
        for line in attached_loops().splitlines()
        if (str(tmp_path) in line or str(state_dir) in line)
        and not any(line.startswith(f"{dev}:") for dev in keep)
    ]
    assert not mine, mine


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr.rstrip("\n")


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_a_full_database_filesystem_stops_the_run_and_keeps_what_was_recorded(
    run_ssd: Any, small_fs: Path, fill_after_first: Any, tmp_path: Path, private_state_dir: Path
) -> None:
    db = small_fs / "results.sqlite"
    run = run_ssd("--dut=scratch:64M", f"--ssd-db={db}", *fill_after_first(small_fs))
    assert _stopped(run) == (
        f"Interrupted: pytest-ssd stopped the run: {db}: database or disk is full: free space"
        " on its filesystem, or give another database file"
    )
    _no_loop_left(tmp_path, private_state_dir)
    # results.json lives elsewhere: exported from the database (the one store), it has what
    # the database took, the first test, marked incomplete; the second's fio output is on disk
    data = run.results()
    assert [m["name"] for m in data["measurements"]] == ["seq-read"]
    assert list(run.run_dir.glob("artifacts/*seq-write*/*/fio.stdout")), "measured, kept on disk"
    assert data["run"]["complete"] is False
    (small_fs / "filler").unlink()
    listed = run_cli("--db", str(db), "list")
    assert listed.returncode == 0, listed.stderr
    assert f"{data['run']['id']} " in listed.stdout and " NO " in listed.stdout
    # the first test's transaction is in the database; the failed one left nothing half-written
    assert _rows(db, "SELECT name FROM measurements") == [("seq-read",)]
    assert _rows(db, "SELECT count(*) FROM metrics") == [(1,)]


def test_a_full_report_folder_stops_the_run_and_keeps_results_json(  # noqa: PLR0917
    run_ssd: Any,
    small_fs: Path,
    fill_after_first: Any,
    loop_device: Any,
    tmp_path: Path,
    private_state_dir: Path,
) -> None:
    # a loop device of ours, not scratch: its backing file stays off the small filesystem
    dev: Path = loop_device(64)
    reports = small_fs / "reports"
    db = reports / "results.sqlite"
    run = run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        f"--ssd-report-dir={reports}",
        *fill_after_first(small_fs),
    )
    assert _stopped(run) == (
        f"Interrupted: pytest-ssd stopped the run: {db}: database or disk is full: free space"
        " on its filesystem, or give another database file"
    )
    run_dir = (reports / "latest").resolve()
    report = [line for line in run.result.outlines if line.startswith("ERROR: pytest-ssd:")]
    assert report == [
        f"ERROR: pytest-ssd: cannot write the report into {run_dir}: No space left on device:"
        f" free space there, then rebuild it with 'pytest-ssd report {run_dir.name}'"
    ]
    _no_loop_left(tmp_path, private_state_dir, keep=(dev,))
    # results.json as last written, after the first test: whole, never a partial file
    data = json.loads((run_dir / "results.json").read_text())
    assert [m["name"] for m in data["measurements"]] == ["seq-read"]
    assert data["run"]["complete"] is False
    assert not list(small_fs.rglob("*.tmp")), "no temporary file left"
    (small_fs / "filler").unlink()
    assert _rows(db, "SELECT name FROM measurements") == [("seq-read",)]
    rebuilt = run_cli("--db", str(db), "report", run_dir.name)
    assert rebuilt.returncode == 0, rebuilt.stderr


def test_a_read_only_report_folder_is_one_line(
    run_ssd: Any, tmp_path: Path, loop_device: Any, private_state_dir: Path
) -> None:
    dev: Path = loop_device(64)
    with tmpfs(tmp_path / "ro", "1m") as mnt:
        (mnt / "reports").mkdir()
        remount(mnt, "ro")
        run = run_ssd(f"--dut={dev}", f"--ssd-confirm={dev}", f"--ssd-report-dir={mnt}/reports")
        line = _usage_error(run)
    assert line.startswith(f"ERROR: cannot write {mnt}/reports/")
    assert line.endswith(
        ": Read-only file system: make its folder writable or give --ssd-report-dir another folder"
    )
    _no_loop_left(tmp_path, private_state_dir, keep=(dev,))


def test_a_database_in_a_read_only_folder_is_one_line(
    run_ssd: Any, tmp_path: Path, private_state_dir: Path
) -> None:
    with tmpfs(tmp_path / "ro", "1m") as mnt:
        remount(mnt, "ro")
        db = mnt / "results.sqlite"
        line = _usage_error(run_ssd("--dut=scratch:64M", f"--ssd-db={db}"))
    assert line == (
        f"ERROR: {db}: unable to open database file: make it and its folder writable (SQLite"
        " keeps -wal and -shm files beside it), or give another database file"
    )
    _no_loop_left(tmp_path, private_state_dir)


def test_a_damaged_database_is_one_line_for_a_run_and_for_list(
    run_ssd: Any, tmp_path: Path, private_state_dir: Path
) -> None:
    db = tmp_path / "results.sqlite"
    first = run_ssd("--dut=scratch:64M", f"--ssd-db={db}", "-k", "rnd-read")
    first.result.assert_outcomes(passed=1)
    corrupt_page(db, "runs")
    before = sha256(db)
    line = _usage_error(run_ssd("--dut=scratch:64M", f"--ssd-db={db}", "-k", "rnd-read"))
    assert line.startswith(f"ERROR: {db}: the database is damaged (quick_check: ")
    assert line.endswith(
        "): move it aside (the next run starts a new one); 'sqlite3 FILE .recover | sqlite3 NEW'"
        " saves what is still readable"
    )
    assert sha256(db) == before, "nothing is written into a damaged database"
    _no_loop_left(tmp_path, private_state_dir)
    assert _one_line(run_cli("--db", str(db), "list"), CLI_DB) == (
        f"pytest-ssd: {db}: the database is damaged (database disk image is malformed): move it"
        " aside (the next run starts a new one); 'sqlite3 FILE .recover | sqlite3 NEW' saves"
        " what is still readable"
    )
    assert sha256(db) == before


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_a_foreign_sqlite_file_as_the_database_is_refused_untouched(
    run_ssd: Any, tmp_path: Path, private_state_dir: Path, wal: bool
) -> None:
    mine = tmp_path / "mine" / "notes.sqlite"
    mine.parent.mkdir()
    before = foreign_db(mine, wal=wal)
    line = _usage_error(run_ssd("--dut=scratch:64M", f"--ssd-db={mine}"))
    assert line == (
        f"ERROR: {mine}: not a pytest-ssd results database (SQLite application id 0x0, user"
        " version 0, tables: notes); it was left untouched: give another file"
    )
    assert sha256(mine) == before
    assert [p.name for p in mine.parent.iterdir()] == ["notes.sqlite"], "no -wal, no -shm"
    _no_loop_left(tmp_path, private_state_dir)


def test_export_or_report_onto_the_database_is_refused(run_ssd: Any, tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    run_ssd("--dut=scratch:64M", f"--ssd-db={db}", "-k", "rnd-read").result.assert_outcomes(
        passed=1
    )
    before = sha256(db)
    for command in (["export", "--format", "csv"], ["report", "latest"]):
        for output in (db, db.with_name(f"{db.name}-wal")):
            done = run_cli("--db", str(db), *command, "-o", str(output))
            what = "the results database" if output == db else f"{output.name}, beside the database"
            assert _one_line(done, CLI_OUTPUT) == (
                f"pytest-ssd: refusing to write {output}: it is {what} this command reads ({db});"
                " give -o another file"
            )
            assert sha256(db) == before
    listed = run_cli("--db", str(db), "list")
    assert listed.returncode == 0 and "1 passed" in listed.stdout


KEEPS_SERIES = """
import numpy as np


def test_a_big_series(ssd):
    ssd.series("big", values=np.random.default_rng(0).random(1 << 20))  # 8 MiB, incompressible


def test_after_it(ssd):
    pass
"""


def test_a_series_meeting_a_full_report_folder_is_one_line_and_no_file(
    run_ssd: Any, small_fs: Path, loop_device: Any, tmp_path: Path
) -> None:
    """A test's series (an .npz in its artifacts) on a full filesystem: its test fails in one
    line, the run stops as for any full report folder, and no empty or partial .npz is left."""
    dev: Path = loop_device(64)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text('pytest_ssd_suite = "keeps"\n')
    (suite / "test_keeps.py").write_text(KEEPS_SERIES)
    reports = small_fs / "reports"
    run = run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        f"--ssd-report-dir={reports}",
        f"--ssd-db={tmp_path / 'results.sqlite'}",
        suite=suite,
        rootdir=None,
    )
    npz = next((reports / "latest" / "artifacts").glob("*test_a_big_series*")) / "big.npz"
    said = (
        f"cannot write {npz.resolve()}: No space left on device: free space on its filesystem"
        " or give --ssd-report-dir another folder"
    )
    assert _stopped(run) == f"Interrupted: pytest-ssd stopped the run: {said}"
    assert f"StorageError: {said}" in run.result.outlines, run.result.outlines
    run.result.assert_outcomes(failed=1)
    assert not list(small_fs.rglob("*.npz")) and not list(small_fs.rglob("*.tmp")), "no file"
