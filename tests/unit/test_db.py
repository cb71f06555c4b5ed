"""The results database: schema and migrations, writing per test, reading back, resolving."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_ssd.db import SCHEMA_VERSION, ResultsDb, connect, shared_test_id
from pytest_ssd.db.arrays import pack, unpack
from pytest_ssd.errors import DatabaseError
from tests.unit.db_fixtures import CORNERS, write_run


def test_a_run_reads_back_as_written(tmp_path: Path) -> None:
    db_path = tmp_path / "results.sqlite"
    write_run(db_path, "run-1", "drive A")
    with ResultsDb(db_path) as db:
        run = db.run("run-1")
        assert run.complete and run.outcome == {"passed": 4} and run.end is not None
        assert [d.label for d in run.drives] == ["drive A"]
        found = db.results(run.drives[0])
    assert [m.name for m in found.measurements] == [name for name, *_ in CORNERS]
    assert found.measurements[2].metrics["read"]["iops"] == 3000.0
    assert found.measurements[0].workload["block_size"] == 131072
    assert len(found.series) == 4 and found.series[0].arrays["count"].tolist() == [5, 1]
    assert set(found.tests.values()) == {"passed"}


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
    with pytest.raises(DatabaseError, match=r"schema version 2 is newer .* upgrade pytest-ssd"):
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
    ],
)
def test_test_key_drops_the_device(nodeid: str, dut: str, key: str) -> None:
    assert shared_test_id(nodeid, dut) == key


def test_arrays_round_trip_with_their_dtypes() -> None:
    arrays = {"t_s": np.linspace(0, 1, 5), "count": np.array([1, 2, 3], dtype=np.int64)}
    back = unpack(pack(arrays))
    assert back["t_s"].tolist() == arrays["t_s"].tolist() and back["count"].dtype == np.int64


def test_the_database_is_shared_by_runs_of_one_host(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "A")
    write_run(path, "run-2", "B")
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM hosts").fetchone()[0] == 1
    assert conn.execute("SELECT count(DISTINCT run_id) FROM measurements").fetchone()[0] == 2
    assert path.stat().st_size > 0
