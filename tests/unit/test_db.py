"""The results database: schema and migrations, writing per test, reading back, resolving."""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ssd.db import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    ResultsDb,
    TestRecords,
    connect,
    schema,
    shared_test_id,
)
from pytest_ssd.db.arrays import pack, unpack
from pytest_ssd.db.export import ResultsExport, results_json
from pytest_ssd.db.schema import _to_wal
from pytest_ssd.errors import DatabaseError
from pytest_ssd.results import StorageError
from pytest_ssd.results.record import SeriesRecord
from tests.unit.db_fixtures import (
    CORNERS,
    corner,
    corrupt_page,
    foreign_db,
    remount,
    sha256,
    tmpfs,
    write_run,
)


def test_percentiles_the_sample_cannot_resolve_are_null(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    write_run(db_path, "run-1", "drive A")
    conn = sqlite3.connect(db_path)
    rows = conn.execute(
        "SELECT p, us, resolved FROM percentiles WHERE measurement_id = 1"
    ).fetchall()
    assert (99.999, None, 0) not in rows  # 100,000 samples resolve p99.999
    assert all((us is None) == (not resolved) for _, us, resolved in rows)
    conn.execute("UPDATE percentiles SET resolved = 0, us = NULL WHERE p = 99.999")
    conn.commit()
    with ResultsDb(db_path) as db:  # the measurement's own JSON keeps fio's value and the flag
        metrics = db.results(db.run("run-1").drives[0]).measurements[0].metrics["read"]
    assert metrics["clat"]["percentiles"][-1]["resolved"] is True


def test_an_unfinished_run_is_incomplete_but_keeps_its_tests(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    write_run(db_path, "run-1", "drive A", finish=False)
    with ResultsDb(db_path) as db:
        run = db.run("run-1")
        assert not run.complete and run.end is None
        assert len(db.results(run.drives[0]).measurements) == 4


KILLER = """
import os, signal, sys
from pathlib import Path
from tests.unit.db_fixtures import write_run
write_run(Path(sys.argv[1]), "killed", "drive K", finish=False)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_sigkill_after_writing_leaves_every_test_readable(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    repo = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-c", KILLER, str(db_path)]
    done = subprocess.run(argv, cwd=repo, timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL
    with ResultsDb(db_path) as db:
        run = db.run("killed")
        assert not run.complete
        assert len(db.results(run.drives[0]).measurements) == len(CORNERS)


def test_schema_version_and_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    newer = rf"schema version {SCHEMA_VERSION + 1} is newer .* upgrade pytest-ssd"
    with pytest.raises(DatabaseError, match=newer):
        connect(path)


def test_not_a_database_and_no_database_are_one_line_errors(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_text("this is not sqlite " * 100)
    with pytest.raises(DatabaseError, match="not a pytest-ssd results database") as bad:
        connect(junk)
    assert "\n" not in str(bad.value)
    with pytest.raises(DatabaseError, match="no results database here"):
        ResultsDb(tmp_path / "missing.sqlite")


def test_a_second_open_does_not_migrate_again(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    connect(path).close()
    with ResultsDb(path) as db:
        assert [r.id for r in db.runs()] == ["run-1"]


def test_resolve_labels_runs_and_all(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    write_run(path, "run-2", "B")
    write_run(path, "run-3", "A", scale=2)
    with ResultsDb(path) as db:
        assert [(d.run_id, d.label) for d in db.resolve(["A"])] == [("run-3", "A")]
        assert [d.run_id for d in db.resolve(["run-1"])] == ["run-1"]
        assert {d.run_id for d in db.resolve(["all"])} == {"run-3", "run-2"}
        assert [d.run_id for d in db.resolve(["A"], exclude_run="run-3")] == ["run-1"]
        assert db.resolve(["run-3"], exclude_run="run-3") == []
        with pytest.raises(DatabaseError, match=r"no run or label 'C' .*'A'"):
            db.resolve(["C"])
        assert [label for label, _, _ in db.labels()] == ["A", "B"]


@pytest.mark.parametrize(
    ("nodeid", "dut", "key"),
    [
        ("s/t.py::test_x[scratch-seq-read]", "scratch", "s/t.py::test_x[seq-read]"),
        ("s/t.py::test_x[nvme0n1]", "nvme0n1", "s/t.py::test_x"),
        ("s/t.py::test_x[qd1-sdb-read]", "sdb", "s/t.py::test_x[qd1-read]"),
        ("s/t.py::test_x", "sdb", "s/t.py::test_x"),
        # under -n N: xdist's loadgroup suffix goes too (a run with workers matches one without)
        ("s/t.py::test_x[scratch-seq-read]@dut-scratch", "scratch", "s/t.py::test_x[seq-read]"),
        ("s/t.py::test_x[loop3]@dut-loop3", "loop3", "s/t.py::test_x"),
    ],
)
def test_test_key_drops_the_device(nodeid: str, dut: str, key: str) -> None:
    assert shared_test_id(nodeid, dut) == key


def test_arrays_round_trip_with_their_dtypes() -> None:
    arrays = {"t_s": np.linspace(0, 1, 5), "count": np.array([1, 2, 3], dtype=np.int64)}
    back = unpack(pack(arrays))
    assert back["t_s"].tolist() == arrays["t_s"].tolist() and back["count"].dtype == np.int64


@pytest.mark.parametrize(
    "values", [(1, 2, 3), [0], [-(1 << 63), (1 << 63) - 1], [], [True, False], [1, 2.5], [1 << 63]]
)
def test_plain_int_sequences_pack_as_numpy_packs_them(values: list[object]) -> None:
    # a histogram of Python ints is written without numpy (an xdist worker never loads it):
    # the same .npy bytes numpy writes, and anything else is numpy's own
    ours = zipfile.ZipFile(io.BytesIO(pack({"ns": values, "count": values})))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, ns=np.asarray(values), count=np.asarray(values))
    theirs = zipfile.ZipFile(buffer)
    assert ours.namelist() == theirs.namelist() == ["ns.npy", "count.npy"]
    assert all(ours.read(name) == theirs.read(name) for name in ours.namelist())


def test_packing_a_histogram_does_not_load_numpy() -> None:
    code = (
        "import sys; from pytest_ssd.db.arrays import pack; "
        "blob = pack({'ns': (1, 2), 'count': [3, 4]}); "
        "assert blob.startswith(b'PK'); print('numpy' in sys.modules)"
    )
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_the_database_is_shared_by_runs_of_one_host(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    write_run(path, "run-2", "B")
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM hosts").fetchone()[0] == 1
    assert conn.execute("SELECT count(DISTINCT run_id) FROM measurements").fetchone()[0] == 2
    assert path.stat().st_size > 0


# --- what is ours, and storage faults -------------------------------------------------------


def _one_line(exc: pytest.ExceptionInfo[DatabaseError] | pytest.ExceptionInfo[StorageError]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_our_database_carries_the_application_id(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_older_database_of_ours_without_the_id_is_kept_and_marked(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 0")  # as pytest-ssd wrote it before the id
    conn.commit()
    conn.close()
    write_run(path, "run-2", "B")
    with ResultsDb(path) as db:
        assert [r.id for r in db.runs()] == ["run-2", "run-1"]
    assert sqlite3.connect(path).execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path: Path, wal: bool) -> None:
    path = tmp_path / "mine.sqlite"
    before = foreign_db(path, wal=wal)
    side = sorted(p.name for p in tmp_path.iterdir())
    for open_it in (connect, ResultsDb, lambda p: write_run(p, "run-1", "A")):
        with pytest.raises(DatabaseError) as refused:
            open_it(path)
        assert _one_line(refused).startswith(f"{path}: not a pytest-ssd results database (")
        assert "tables: notes" in str(refused.value) and "left untouched" in str(refused.value)
        assert sha256(path) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == side  # not even a -wal or -shm
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == ("wal" if wal else "delete")
    assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 2


def test_an_empty_sqlite_file_is_foreign_but_an_empty_file_is_new(tmp_path: Path) -> None:
    made = tmp_path / "made.sqlite"
    conn = sqlite3.connect(made)
    conn.execute("PRAGMA user_version = 0")
    conn.execute("VACUUM")  # a header, no table: someone's database, not ours to fill
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.close()
    before = sha256(made)
    with pytest.raises(DatabaseError, match="not a pytest-ssd results database"):
        connect(made)
    assert sha256(made) == before
    touched = tmp_path / "touched.sqlite"
    touched.touch()
    write_run(touched, "run-1", "A")
    with ResultsDb(touched) as db:
        assert [r.id for r in db.runs()] == ["run-1"]


def test_a_database_caught_mid_write_is_looked_at_again_not_called_damaged(
    tmp_path: Path,
) -> None:
    """The lock-free first look reads torn pages while another session writes: it looks
    again (8 sessions starting at once on a busy machine were refused as 'damaged')."""
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    whole = path.read_bytes()
    page = int.from_bytes(whole[16:18], "big")
    torn = whole[:100] + b"\xff" * (page - 100) + whole[page:]  # the schema page mid-write
    path.write_bytes(torn)
    with pytest.raises(DatabaseError, match="the database is damaged"):
        schema.check(path)  # torn for longer than the retries: damaged, in one line
    path.write_bytes(torn)
    mended = threading.Timer(0.2, path.write_bytes, (whole,))  # the write completes
    mended.start()
    try:
        found = schema.check(path)
    finally:
        mended.join()
    assert found is not None and found.ours and found.version == SCHEMA_VERSION
    write_run(path, "run-2", "B")
    with ResultsDb(path) as db:
        assert sorted(r.id for r in db.runs()) == ["run-1", "run-2"]


def test_a_damaged_page_is_one_line_for_the_writer_and_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    corrupt_page(path, "runs")
    before = sha256(path)
    with pytest.raises(DatabaseError) as refused:
        write_run(path, "run-2", "B")
    assert _one_line(refused).startswith(f"{path}: the database is damaged (")
    assert "move it aside" in str(refused.value) and ".recover" in str(refused.value)
    assert sha256(path) == before, "nothing is written into a damaged database"
    with pytest.raises(DatabaseError) as unreadable, ResultsDb(path) as db:
        db.runs()
    assert _one_line(unreadable).startswith(f"{path}: the database is damaged (database disk")


def test_a_full_filesystem_keeps_every_committed_test(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "512k") as mnt:
        path = mnt / "results.sqlite"
        writer = write_run(path, "run-1", "A", finish=False)
        blob = pack({"noise": np.random.default_rng(1).random(100_000)})  # 800 kB, barely packed
        series = (SeriesRecord(device="d0", name="big", meta={}, file=""), blob)
        with pytest.raises(DatabaseError) as full:
            writer.add(TestRecords("t::big", series=[series]))
        assert _one_line(full) == (
            f"{path}: database or disk is full: free space on its filesystem, or give another"
            " database file"
        )
        writer.close()
        remount(mnt, "size=4m")
        with ResultsDb(path) as db:
            (run,) = db.runs()
            assert not run.complete
            results = db.results(run.drives[0])
            assert len(results.measurements) == len(CORNERS) and len(results.series) == 4


def test_a_database_in_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "1m") as mnt:
        write_run(mnt / "results.sqlite", "run-1", "A")
        remount(mnt, "ro")
        with pytest.raises(DatabaseError) as refused:
            write_run(mnt / "results.sqlite", "run-2", "B")
        assert _one_line(refused).startswith(f"{mnt / 'results.sqlite'}: ")
        assert "make it and its folder writable" in str(refused.value)
        with pytest.raises(DatabaseError) as new:
            write_run(mnt / "new" / "results.sqlite", "run-1", "A")
        assert "Read-only file system: make it and its folder writable" in _one_line(new)


def test_results_json_is_the_database_run_in_the_documented_schema(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    write_run(db_path, "run-1", "drive A").close()
    with ResultsDb(db_path) as db:
        data = results_json(db, "run-1")
        found = db.results(db.run("run-1").drives[0])
    assert list(data) == [
        "schema",
        "run",
        "devices",
        "transitions",
        "measurements",
        "derived",
        "conformance",
    ]
    assert data["schema"] == 1 and data["run"]["id"] == "run-1" and data["run"]["complete"]
    assert data["run"]["outcome"] == {"passed": 4} and data["run"]["host"] == "lab"
    assert list(data["devices"]) == ["d0"]
    assert data["measurements"] == [m.as_dict() for m in found.measurements]


def test_an_export_renders_new_measurements_only_and_writes_what_results_json_says(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "results.sqlite"
    writer = write_run(db_path, "run-1", "drive A", finish=False)
    export = ResultsExport(tmp_path, db_path, "run-1")
    export.write()
    first = json.loads((tmp_path / "results.json").read_text())
    assert len(first["measurements"]) == len(CORNERS)
    for n in range(3):  # more records as the run goes: each export adds the new ones
        m = corner("d0", CORNERS[n], 2000.0 + n)
        writer.add(TestRecords(f"t::later{n}", measurements=[replace(m, test=f"t::later{n}")]))
        export.write()
    writer.finish({"passed": len(CORNERS) + 3}, complete=True)
    writer.close()
    export.write()
    with ResultsDb(db_path) as db:
        whole = json.dumps(results_json(db, "run-1"), indent=1) + "\n"
    assert (tmp_path / "results.json").read_text() == whole
    assert len(json.loads(whole)["measurements"]) == len(CORNERS) + 3
    assert len(export._rendered) == len(CORNERS) + 3, "each measurement rendered once"


def test_results_json_on_a_full_filesystem_keeps_its_last_version(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    write_run(db_path, "run-1", "drive A").close()
    with tmpfs(tmp_path / "small", "64k") as mnt:
        export = ResultsExport(mnt, db_path, "run-1")
        export.write()
        before = (mnt / "results.json").read_bytes()
        (mnt / "filler").write_bytes(b"x" * (64 * 1024 - len(before) - 4096))
        with sqlite3.connect(db_path) as conn:  # a bigger run than the filesystem holds
            conn.execute("UPDATE runs SET environment = ?", ('{"host": "' + "x" * 90_000 + '"}',))
        with pytest.raises(StorageError) as full:
            export.write()
        assert _one_line(full) == (
            f"cannot write {mnt / 'results.json'}: No space left on device: free space on its"
            " filesystem or give --ssd-report-dir another folder"
        )
        assert (mnt / "results.json").read_bytes() == before
        assert sorted(p.name for p in mnt.iterdir()) == ["filler", "results.json"], "no partial"


def test_results_json_in_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    write_run(db_path, "run-1", "drive A").close()
    with tmpfs(tmp_path / "ro", "64k") as mnt:
        remount(mnt, "ro")
        with pytest.raises(StorageError) as refused:
            ResultsExport(mnt, db_path, "run-1").write()
        assert _one_line(refused) == (
            f"cannot write {mnt / 'results.json'}: Read-only file system: make its folder"
            " writable or give --ssd-report-dir another folder"
        )


class _SwitchMet:
    """A connection whose switch to the write-ahead log meets another connection *busy*
    times (SQLite then says "database is locked" at once, without its busy wait)."""

    def __init__(self, busy: int, code: int = sqlite3.SQLITE_BUSY) -> None:
        self.busy, self.code, self.mode, self.tries = busy, code, "delete", 0

    def execute(self, statement: str) -> Any:
        if statement == "PRAGMA journal_mode = WAL":
            self.tries += 1
            if self.tries <= self.busy:
                met = sqlite3.OperationalError("database is locked")
                met.sqlite_errorcode = self.code
                raise met
            self.mode = "wal"
        return _Rows([(self.mode,)])


class _Rows:
    def __init__(self, rows: list[tuple[str]]) -> None:
        self.rows = rows

    def fetchone(self) -> tuple[str]:
        return self.rows[0]


def test_the_switch_to_wal_is_tried_again_when_another_session_meets_it() -> None:
    # before: 8 sessions creating one database at once, 1 in 200 failed "database is locked"
    conn = _SwitchMet(busy=3)
    _to_wal(conn)  # type: ignore[arg-type]  # the two calls it makes
    assert (conn.tries, conn.mode) == (4, "wal")
    other = _SwitchMet(busy=1, code=sqlite3.SQLITE_READONLY)
    with pytest.raises(sqlite3.OperationalError):
        _to_wal(other)  # type: ignore[arg-type]
    assert other.tries == 1, "only a busy switch is tried again"
