"""``pytest-ssd``: list, report, compare and export on a database written without fio."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from pytest_ssd.cli import EXIT_DB, EXIT_OUTPUT, EXIT_USAGE, main
from pytest_ssd.cli.export import as_csv
from pytest_ssd.db import SCHEMA_VERSION, schema
from tests.cli import cli_argv, run_cli
from tests.unit.db_fixtures import (
    CORNERS,
    as_older,
    corrupt_page,
    foreign_db,
    remount,
    sha256,
    tmpfs,
    write_run,
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "reports" / "results.sqlite"
    write_run(path, "run-1", "drive A")
    write_run(path, "run-2", "drive B", scale=2.0)
    write_run(path, "run-3", "drive C", finish=False)
    return path


def test_list_shows_runs_complete_or_not_and_labels(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(db), "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    run3 = next(line for line in lines if line.startswith("run-3"))
    run1 = next(line for line in lines if line.startswith("run-1"))
    assert " NO " in run3 and "d0: drive C" in run3
    assert " yes " in run1 and "4 passed" in run1
    assert any(line.startswith("drive B") and line.endswith("run-2") for line in lines)


def test_export_csv_is_one_flat_table(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    assert main(["--db", str(db), "export", "--format", "csv", "-o", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 3 * len(CORNERS)  # one row per measurement and direction
    row = next(r for r in rows if r["run_id"] == "run-2" and r["name"] == "rnd-read")
    assert row["label"] == "drive B" and row["direction"] == "read"
    assert float(row["iops"]) == 6000.0 and row["block_size_bytes"] == "4096"
    assert float(row["p99_us"]) == 300.0 and row["p99.999_us"] == "600.0"


def test_export_json_of_one_run_and_other_tables(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(db), "export", "--format", "json", "--run", "run-1"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert {r["run_id"] for r in records} == {"run-1"} and len(records) == len(CORNERS)
    assert main(["--db", str(db), "export", "--table", "runs", "--format", "json"]) == 0
    runs = {r["run_id"]: r["complete"] for r in json.loads(capsys.readouterr().out)}
    assert runs == {"run-1": 1, "run-2": 1, "run-3": 0}


def test_report_rebuilds_a_page_with_sections_and_figures(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rebuilt.html"
    argv = ["--db", str(db), "report", "run-3", "--compare", "drive A", "-o", str(out)]
    assert main(argv) == 0
    said = capsys.readouterr()
    # everything written is printed: the page, and the figures folder beside it
    assert said.out.splitlines() == [str(out), f"{tmp_path / 'figures-from-db'}/"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "figures-from-db",
        "rebuilt.html",
        "reports",
    ]
    # a line as each section starts: the graphs take seconds
    assert "pytest-ssd: report: Datasheet conformance (1 of " in said.err
    assert "pytest-ssd: report: Devices under test (" in said.err
    assert "pytest-ssd: report: Four corners (suites/smoke) (" in said.err
    page = out.read_text()
    for section in ("ssd-devices", "ssd-environment", "ssd-suite-smoke", "ssd-tests"):
        assert f'id="{section}"' in page
    assert "never: the run was cut short" in page  # run-3 did not finish
    assert page.count("<img") == 2 and "drive A" in page and "drive C" in page  # smoke, pair
    assert 'id="ssd-pair"' in page
    assert {p.suffix for p in (tmp_path / "figures-from-db").iterdir()} == {".png", ".svg"}


def test_compare_labels_puts_them_on_one_graph(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp.html"
    assert main(["--db", str(db), "compare", "drive B", "drive A", "-o", str(out)]) == 0
    page = out.read_text()
    assert "compared with drive A" in page
    suite = page[page.index('id="ssd-suite-smoke"') :]
    assert suite.count("<td>drive A</td>") == 4 and suite.count("<td>drive B</td>") == 4


def test_compare_of_one_drive_is_refused_in_one_line(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp.html"
    assert main(["--db", str(db), "compare", "drive A", "-o", str(out)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        "pytest-ssd: compare needs two drives or more: 'drive A' is one (drive A, run run-1);"
        " name another label or run id (pytest-ssd list shows them)\n"
    )
    assert not out.exists() and not list(tmp_path.glob("figures-*"))


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "run-1"],
        ["compare", "drive A", "drive B"],
        ["export", "--format", "csv"],
        ["export", "--format", "results-json", "--run", "run-1"],
    ],
)
def test_an_output_in_a_missing_folder_is_refused_in_one_line_and_nothing_made(
    db: Path, tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(tmp_path.iterdir())  # the database's folder, reports/
    out = tmp_path / "nonexistent" / "dir" / "x.html"
    assert main(["--db", str(db), *argv, "-o", str(out)]) == EXIT_OUTPUT
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err == (
        f"pytest-ssd: cannot write {out}: {out.parent} does not exist;"
        " make it first or give -o another\n"
    )
    assert sorted(tmp_path.iterdir()) == before, "no folder, no figures made"


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "no-such-run"],
        ["compare", "no such label"],
        ["export", "--run", "no-such-run"],
    ],
)
def test_what_the_database_lacks_is_exit_3_and_one_line(
    db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(db), *argv]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.startswith("pytest-ssd: ") and err.count("\n") == 1


def test_a_missing_database_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(tmp_path / "none.sqlite"), "list"]) == EXIT_DB
    assert "no results database here" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()


def test_bad_arguments_are_exit_2() -> None:
    with pytest.raises(SystemExit) as stop:
        main(["export", "--format", "xls"])
    assert stop.value.code == 2


def test_the_console_script_has_help_everywhere() -> None:
    script = cli_argv()[0]
    assert Path(script).name == "pytest-ssd", "pytest-ssd is not installed: pip install -e ."
    for sub in ([], ["list"], ["report"], ["compare"], ["export"]):
        done = run_cli(*sub, "--help", timeout=60)
        assert done.returncode == 0 and "usage: pytest-ssd" in done.stdout


# --- output files: never onto the database, whole or not at all; safe CSV ----------------


def _db_files(db: Path) -> dict[str, str]:
    return {p.name: sha256(p) for p in db.parent.iterdir() if p.name.startswith(db.name)}


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == EXIT_OUTPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pytest-ssd: refusing to write ")
    return err


@pytest.mark.parametrize("command", [["export"], ["report", "run-1"], ["compare", "drive A"]])
def test_output_onto_the_database_or_its_side_files_is_refused(
    db: Path, tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    reader = sqlite3.connect(db)  # an open reader keeps -wal and -shm beside the database
    reader.execute("SELECT count(*) FROM runs").fetchone()
    before = _db_files(db)
    assert {f"{db.name}-wal", f"{db.name}-shm"} <= set(before)
    hard = tmp_path / "hard-link.csv"
    hard.hardlink_to(db)
    link = tmp_path / "symlink.csv"
    link.symlink_to(db)
    relative = Path(os.path.relpath(db.parent, Path.cwd())) / ".." / db.parent.name / db.name
    for output in (
        db,
        relative,
        db.parent / f"{db.name}-wal",
        db.parent / f"{db.name}-shm",
        db.parent / f"{db.name}-journal",
        hard,
        link,
    ):
        err = _refused(["--db", str(db), *command, "-o", str(output)], capsys)
        assert f"this command reads ({db}); give -o another file" in err
    assert _db_files(db) == before  # the reader still open: SQLite itself changed nothing
    reader.close()
    assert main(["--db", str(db), "list"]) == 0


def test_an_output_is_written_whole_or_left_as_it_was(db: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "4k") as mnt:  # one page: the old file's
        out = mnt / "m.csv"
        out.write_text("the previous export\n")
        assert main(["--db", str(db), "export", "-o", str(out)]) == EXIT_OUTPUT
        assert out.read_text() == "the previous export\n"
        assert [p.name for p in mnt.iterdir()] == ["m.csv"], "no partial temporary file"
        remount(mnt, "size=1m")
        assert main(["--db", str(db), "export", "--format", "json", "-o", str(out)]) == 0
        assert len(json.loads(out.read_text())) == 3 * len(CORNERS)
        assert [p.name for p in mnt.iterdir()] == ["m.csv"]


def test_a_full_or_read_only_output_folder_is_one_line_exit_4(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tmpfs(tmp_path / "small", "4k") as mnt:
        (mnt / "filler").write_bytes(b"x" * 4096)
        assert main(["--db", str(db), "export", "-o", str(mnt / "m.csv")]) == EXIT_OUTPUT
        err = capsys.readouterr().err
        assert err == (
            f"pytest-ssd: cannot write {mnt / 'm.csv'}: No space left on device: free space on"
            " its filesystem or give -o another folder\n"
        )
        remount(mnt, "ro,size=1m")
        assert main(["--db", str(db), "export", "-o", str(mnt / "m.csv")]) == EXIT_OUTPUT
        assert capsys.readouterr().err == (
            f"pytest-ssd: cannot write {mnt / 'm.csv'}: Read-only file system: make its folder"
            " writable or give -o another folder\n"
        )


def test_a_damaged_or_foreign_database_is_one_line_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    write_run(db, "run-1", "drive A")
    corrupt_page(db, "runs")
    assert main(["--db", str(db), "list"]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.startswith(f"pytest-ssd: {db}: the database is damaged (database disk image")
    assert err.count("\n") == 1
    mine = tmp_path / "mine.sqlite"
    before = foreign_db(mine)
    assert main(["--db", str(mine), "export"]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.startswith(f"pytest-ssd: {mine}: not a pytest-ssd results database (") and (
        err.count("\n") == 1
    )
    assert sha256(mine) == before


FORMULAS = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx", '=HYPERLINK("http://x","y")']


@pytest.mark.parametrize("label", FORMULAS)
def test_csv_cells_a_spreadsheet_would_run_start_with_a_quote(
    tmp_path: Path, label: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", label)
    assert main(["--db", str(path), "export", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline="")))
    assert {r["label"] for r in rows} == {"'" + label}
    assert main(["--db", str(path), "export", "--format", "json"]) == 0
    assert {r["label"] for r in json.loads(capsys.readouterr().out)} == {label}  # JSON as is


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        (-1.5, "-1.5"),
        ("-1.5", "-1.5"),
        ("+2e-3", "+2e-3"),
        (-3, "-3"),
        (None, ""),
        ("-1.5x", "'-1.5x"),
        ("-", "'-"),
        ("a=b", "a=b"),
        ("x\r=1+1", "x\r=1+1"),
    ],
)
def test_numbers_stay_numbers_and_a_cr_inside_a_cell_is_no_new_row(cell: object, safe: str) -> None:
    text = as_csv(["x", "y"], [(cell, "=y")])
    assert list(csv.reader(io.StringIO(text, newline=""))) == [["x", "y"], [safe, "'=y"]]


def test_db_may_follow_the_command(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--db", str(db)]) == 0
    assert "run-1" in capsys.readouterr().out
    # the command's --db wins over the one before it
    assert main(["--db", "/nonexistent.sqlite", "list", "--db", str(db)]) == 0


@pytest.mark.parametrize(
    "config",
    [
        ("setup.cfg", "[tool:pytest]\nssd_report_dir = out/runs\n", "out/runs"),
        ("pytest.ini", "[pytest]\nssd_report_dir = lab\n", "lab"),
        ("pyproject.toml", '[tool.pytest.ini_options]\nssd_report_dir = "r"\n', "r"),
        ("tox.ini", "[pytest]\naddopts = -q\n", "reports"),
    ],
)
def test_without_db_the_database_is_found_as_the_plugin_puts_it(
    db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    config: tuple[str, str, str],
) -> None:
    name, text, where = config
    project = tmp_path / "project"
    (project / "suites" / "csd").mkdir(parents=True)
    (project / name).write_text(text)
    (project / where).mkdir(parents=True, exist_ok=True)
    shutil.copy(db, project / where / "results.sqlite")
    monkeypatch.chdir(project / "suites" / "csd")  # below the project's top, as a user may be
    assert main(["list"]) == 0
    assert "run-1" in capsys.readouterr().out


def test_a_setup_cfg_without_pytest_section_is_not_pytests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert main(["list"]) == EXIT_DB
    assert f"{tmp_path}/sub/reports/results.sqlite: no results database" in capsys.readouterr().err


# --- readers never change a database: an older schema is read as it is ---------------------


@pytest.fixture
def db_at(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """Two closed runs in a database of schema version ``request.param``."""
    path = tmp_path / "old" / "results.sqlite"
    write_run(path, "run-1", "drive A").close()
    write_run(path, "run-2", "drive B", scale=2.0).close()
    as_older(path, request.param)
    return path


def _user_version(db: Path) -> int:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("db_at", [1, 2], indirect=True, ids=["v1", "v2"])
@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["report", "run-1"],
        ["compare", "drive B", "drive A"],
        ["export"],
        ["export", "--format", "results-json", "--run", "run-2"],
    ],
    ids=["list", "report", "compare", "export", "results-json"],
)
def test_readers_read_an_older_database_as_it_is_and_never_migrate_it(
    db_at: Path, tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    version, before = _user_version(db_at), sha256(db_at)
    argv = ["--db", str(db_at), *command]
    if command[0] != "list":
        (tmp_path / "out").mkdir()
        argv += ["-o", str(tmp_path / "out" / "page.html")]
    assert main(argv) == 0, capsys.readouterr().err
    assert sha256(db_at) == before, "a reader wrote the database"
    assert _user_version(db_at) == version < SCHEMA_VERSION
    if command[0] == "list":
        assert "drive A" in capsys.readouterr().out


@pytest.mark.parametrize("db_at", [2], indirect=True)
def test_an_older_database_no_reader_can_read_is_refused_saying_who_migrates_it(
    db_at: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(schema.READ_AS, SCHEMA_VERSION)  # a migration readers cannot bridge
    before = sha256(db_at)
    assert main(["--db", str(db_at), "list"]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schema version 2 is older than this pytest-ssd's" in err
    assert "a pytest-ssd session (a writer) migrates it" in err and "back it up first" in err
    assert sha256(db_at) == before and _user_version(db_at) == 2


@pytest.mark.parametrize("db_at", [SCHEMA_VERSION + 1], indirect=True)
def test_a_newer_database_is_refused_by_readers_untouched(
    db_at: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sha256(db_at)
    assert main(["--db", str(db_at), "list"]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is newer than this pytest-ssd's" in err
    assert sha256(db_at) == before


@pytest.mark.parametrize(
    ("column", "argv"),
    [
        ("UPDATE runs SET environment = ?", ["list"]),
        ("UPDATE run_devices SET description = ?", ["report", "run-1", "--compare", "drive B"]),
        (
            "UPDATE measurements SET metrics = ?",
            ["export", "--format=results-json", "--run", "run-1"],
        ),
    ],
    ids=["environment", "description", "measurement"],
)
def test_a_record_nested_5000_deep_is_one_line_exit_3(
    db: Path, column: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(column, ("[" * 5000 + "]" * 5000,))
    conn.close()
    assert main(["--db", str(db), *argv]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not readable JSON (nested deeper than 64 levels)" in err, err
