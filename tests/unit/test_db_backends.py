"""The results database on both backends: SQLite (the default) and a real PostgreSQL server.

Each test runs on a new SQLite file and on a new database of the session's
server (tests/pgserver.py): the same schema, the same writer and readers.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pytest_ssd.cli import EXIT_DB, EXIT_USAGE, main
from pytest_ssd.db import SCHEMA_VERSION, ResultsDb, RunWriter, TestRecords
from pytest_ssd.db.conn import Unreachable, pg_ddl
from pytest_ssd.db.lab import SPOOL_FILE, LabWriter
from pytest_ssd.db.opening import open_reader
from pytest_ssd.db.pg import VERSION_TABLE
from pytest_ssd.db.runid import new_run_id
from pytest_ssd.db.schema import MIGRATIONS, statements
from pytest_ssd.db.sync import count_rows, sync_run
from pytest_ssd.db.url import db_url
from pytest_ssd.errors import DatabaseError
from tests.cli import run_cli
from tests.pgserver import Postgres, local_postgres
from tests.unit.db_fixtures import CORNERS, as_older, corner, description, write_run

#: the tables ``pytest-ssd export`` gives whose rows carry no time of writing
_SAME_ROWS = ("measurements", "devices", "derived", "verdicts", "transitions", "tests")


def _set_version(target: Path | str, version: int) -> None:
    """Mark the database as schema *version* (a newer pytest-ssd's, for the refusal)."""
    if isinstance(target, Path):
        conn = sqlite3.connect(target)
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
        conn.close()
        return
    with psycopg.connect(target, autocommit=True) as pg:
        pg.execute(f"UPDATE {VERSION_TABLE} SET version = {version}")  # type: ignore[arg-type]


def _older(target: Path | str, version: int) -> None:
    """A database made by the pytest-ssd of schema *version*, with a run in it."""
    if isinstance(target, Path):
        write_run(target, "old-run", "drive A")
        as_older(target, version)
        return
    with psycopg.connect(target, autocommit=True) as pg:
        pg.execute(f"CREATE TABLE {VERSION_TABLE} (version BIGINT NOT NULL)")  # type: ignore[arg-type]
        pg.execute(f"INSERT INTO {VERSION_TABLE} VALUES ({version})")  # type: ignore[arg-type]
        for number, script in MIGRATIONS[:version]:
            assert number <= version
            for statement in statements(script):
                pg.execute(pg_ddl(statement))  # type: ignore[call-overload]
        pg.execute(
            "INSERT INTO runs (id, start, run_dir, environment) VALUES"
            " ('old-run', '2026-01-01T00:00:00', '/x', '{}')"
        )


def test_a_run_reads_back_as_written(db_target: Path | str) -> None:
    write_run(db_target, "run-1", "drive A")
    with ResultsDb(db_target) as db:
        run = db.run("run-1")
        assert run.complete and run.outcome == {"passed": 4} and run.end is not None
        assert [d.label for d in run.drives] == ["drive A"]
        found = db.results(run.drives[0])
    assert [m.name for m in found.measurements] == [name for name, *_ in CORNERS]
    assert found.measurements[2].metrics["read"]["iops"] == 3000.0
    assert found.measurements[0].workload["block_size"] == 131072
    assert len(found.series) == 4 and found.series[0].arrays["count"].tolist() == [5, 1]
    assert set(found.tests.values()) == {"passed"}


def test_both_backends_hold_the_same_rows(
    tmp_path: Path, postgres: Postgres, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run written into SQLite and into PostgreSQL exports the same tables."""
    lab = postgres.create_database(f"same_{new_run_id()[-12:]}")
    file = tmp_path / "results.sqlite"
    for target in (file, lab):
        write_run(target, "run-1", "drive A")
    for table in _SAME_ROWS:
        exported = []
        for target in (file, lab):
            assert main(["--db", str(target), "export", "--table", table, "--format", "json"]) == 0
            exported.append(capsys.readouterr().out)
        assert exported[0] == exported[1], table
        assert "run-1" in exported[0] or table not in ("measurements", "tests")


def test_every_reader_reads_both(
    db_target: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(db_target, "run-1", "drive A")
    write_run(db_target, "run-2", "drive B", scale=2.0)
    assert main(["list", "--db", str(db_target)]) == 0
    out = capsys.readouterr().out
    assert "run-1" in out and "run-2" in out and "drive B" in out
    page = tmp_path / "report.html"
    assert (
        main(["report", "run-2", "--db", str(db_target), "--compare", "drive A", "-o", str(page)])
        == 0
    )
    assert 'id="ssd-suite-smoke"' in page.read_text() and "drive A" in page.read_text()
    cmp = tmp_path / "cmp.html"
    assert main(["compare", "drive B", "drive A", "--db", str(db_target), "-o", str(cmp)]) == 0
    assert "compared with drive A" in cmp.read_text()
    assert (
        main(["export", "--db", str(db_target), "--format", "results-json", "--run", "run-1"]) == 0
    )
    assert '"id": "run-1"' in capsys.readouterr().out


def test_a_newer_database_is_refused_in_one_line(
    db_target: Path | str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(db_target, "run-1", "drive A")
    _set_version(db_target, SCHEMA_VERSION + 1)
    newer = rf"schema version {SCHEMA_VERSION + 1} is newer than this pytest-ssd's .*upgrade"
    with pytest.raises(DatabaseError, match=newer) as refused:
        RunWriter(db_target, "run-2", Path("/x"), {})
    assert "\n" not in str(refused.value)
    assert main(["list", "--db", str(db_target)]) == EXIT_DB
    assert capsys.readouterr().err.count("\n") == 1


def test_an_older_database_is_migrated_in_one_transaction_keeping_its_runs(
    db_target: Path | str,
) -> None:
    _older(db_target, 3)
    write_run(db_target, "new-run", "drive B")
    with ResultsDb(db_target) as db:
        assert {r.id for r in db.runs()} == {"old-run", "new-run"}
        seqs = db.conn.execute("SELECT seq FROM measurements WHERE run_id = 'new-run'")
        assert [r[0] for r in seqs.fetchall()] != [None] * len(CORNERS)


def test_a_database_that_is_not_ours_is_refused_untouched(postgres: Postgres) -> None:
    url = postgres.create_database(f"foreign_{new_run_id()[-12:]}")
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute("CREATE TABLE notes (body TEXT)")
    with pytest.raises(DatabaseError, match=r"not a pytest-ssd results database .*notes"):
        RunWriter(url, "run-1", Path("/x"), {})
    with psycopg.connect(url, autocommit=True) as pg:
        tables = pg.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    assert tables == [("notes",)]


def test_a_reader_never_writes_a_server(postgres: Postgres) -> None:
    url = postgres.create_database(f"ro_{new_run_id()[-12:]}")
    write_run(url, "run-1", "drive A")
    conn = open_reader(url)
    try:
        with pytest.raises(DatabaseError, match="read-only transaction"):
            conn.execute("DELETE FROM tests")
    finally:
        conn.close()


def test_an_unknown_scheme_and_an_unreachable_server_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "--db", "mysql://lab/results"]) == EXIT_USAGE
    assert "mysql:// is not supported" in capsys.readouterr().err
    url = f"postgresql://ssd:secret@/lab?host={tmp_path}"
    with pytest.raises(Unreachable) as away:
        RunWriter(url, "run-1", tmp_path, {})
    assert "\n" not in str(away.value) and "secret" not in str(away.value)
    assert "check that the server runs" in str(away.value)
    assert main(["list", "--db", url]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "secret" not in err


def test_loading_a_run_twice_adds_nothing(db_target: Path | str, tmp_path: Path) -> None:
    spool = tmp_path / "run" / SPOOL_FILE
    write_run(spool, "run-1", "drive A")
    run_id, added = sync_run(spool, db_url(db_target))
    assert run_id == "run-1" and added > 0
    assert sync_run(spool, db_url(db_target)) == ("run-1", 0)
    target, source = open_reader(db_target), open_reader(spool)
    try:
        assert count_rows(target, "run-1") == count_rows(source, "run-1") == added
    finally:
        target.close()
        source.close()


def test_writers_at_once_each_keep_every_row(db_target: Path | str) -> None:
    """Eight sessions write at the same time: every run has all its rows, once."""
    failures: list[BaseException] = []

    def session(number: int) -> None:
        try:
            write_run(db_target, f"run-{number}", f"drive {number}", dut=f"d{number}")
        except BaseException as exc:  # noqa: BLE001  # the test says which
            failures.append(exc)

    threads = [threading.Thread(target=session, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    conn = open_reader(db_target)
    try:
        counts = {count_rows(conn, f"run-{n}") for n in range(8)}
    finally:
        conn.close()
    assert len(counts) == 1 and counts.pop() > len(CORNERS)


def _lab_run(lab: str, run_dir: Path, lose: Any = None) -> LabWriter:
    """A run of four tests recorded through a LabWriter; *lose*() is called after the second."""
    writer = LabWriter(db_url(lab), "run-1", run_dir, {"host": "lab"})
    writer.add_device("d0", description("d0", "drive A"), "drive A")
    for number, shape in enumerate(CORNERS):
        if number == 2 and lose is not None:
            lose()
        m = corner("d0", shape, 1000.0 * (number + 1))
        writer.add(TestRecords(m.test, measurements=[m]))
        writer.test_done(m.test, "passed", 1.0, None)
    writer.finish({"passed": len(CORNERS)}, complete=True)
    return writer


def test_a_lab_server_unreachable_at_the_start_leaves_the_run_in_its_spool(
    tmp_path: Path, postgres: Postgres
) -> None:
    away = f"postgresql://postgres@/lab?host={tmp_path}"
    writer = _lab_run(away, tmp_path / "run")
    assert len(writer.notes) == 1 and "unreachable" in writer.notes[0]
    assert "at the session's start" in writer.notes[0] and "pytest-ssd sync" in writer.notes[0]
    lab = postgres.create_database(f"late_{new_run_id()[-12:]}")
    run_id, added = sync_run(tmp_path / "run" / SPOOL_FILE, db_url(lab))
    assert added > 0
    assert (run_id, sync_run(tmp_path / "run" / SPOOL_FILE, db_url(lab))[1]) == ("run-1", 0)
    with ResultsDb(lab) as db:
        run = db.run("run-1")
        assert run.complete and len(db.results(run.drives[0]).measurements) == len(CORNERS)


def test_a_connection_lost_mid_run_goes_on_in_the_spool_and_sync_completes_it(
    tmp_path: Path, postgres: Postgres
) -> None:
    lab = postgres.create_database(f"lost_{new_run_id()[-12:]}")

    def cut() -> None:  # the server ends the session's connection, as a restart does
        with psycopg.connect(lab, autocommit=True) as pg:
            pg.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'pytest-ssd' AND pid <> pg_backend_pid()"
                " AND datname = current_database()"  # this test's run only
            )

    writer = _lab_run(lab, tmp_path / "run", lose=cut)
    assert len(writer.notes) == 1 and "since " in writer.notes[0]
    spool = tmp_path / "run" / SPOOL_FILE
    with ResultsDb(lab) as db:
        kept = db.results(db.run("run-1").drives[0]).measurements
        assert len(kept) == 2, writer.notes  # the two before the cut
        assert not db.run("run-1").complete
    run_id, added = sync_run(spool, db_url(lab))
    assert added > 0 and sync_run(spool, db_url(lab))[1] == 0
    target, source = open_reader(lab), open_reader(spool)
    try:
        assert count_rows(target, run_id) == count_rows(source, run_id)
    finally:
        target.close()
        source.close()
    with ResultsDb(lab) as db:
        assert db.run("run-1").complete


@pytest.mark.device
def test_compare_on_a_server_that_is_away_refuses_in_one_line(tmp_path: Path) -> None:
    """The lab's server stopped (pg_ctl stop -m immediate): ``pytest-ssd compare`` says so in
    one line and exits 3, writing nothing, and says nothing of sessions and spools."""
    with local_postgres() as server:
        url = server.create_database("lab")
        write_run(url, "run-1", "drive A")
        write_run(url, "run-2", "drive B", scale=2.0)
        server.stop("immediate")
        page = tmp_path / "compare.html"
        argv = ["compare", "drive B", "drive A", f"--db={url}", "-o", str(page)]
        done = run_cli(*argv)
        server.start()
    assert done.returncode == EXIT_DB and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert (
        done.stderr.startswith(f"pytest-ssd: {url}: ")
        and "check that the server runs" in done.stderr
    )
    assert "session" not in done.stderr and "sync" not in done.stderr, done.stderr
    assert not page.exists() and list(tmp_path.iterdir()) == []
