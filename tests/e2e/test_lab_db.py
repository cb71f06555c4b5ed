"""A lab's PostgreSQL end to end: sessions writing into it at once, and the server lost mid-run.

A real server (tests/pgserver.py, as the postgres user, socket only), real
sessions of suites/smoke on loop devices here and on a test host (tests/sshd.py).
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pytest_ssd.cli import main
from pytest_ssd.db.lab import SPOOL_FILE
from pytest_ssd.db.opening import open_reader
from pytest_ssd.db.sync import count_rows
from tests.e2e.conftest import smoke_argv
from tests.pgserver import Postgres, local_postgres
from tests.sshd import Sshd

#: the tables ``pytest-ssd export`` gives (runs too: the spool and the server share its times)
TABLES = ("runs", "devices", "measurements", "derived", "verdicts", "transitions", "tests")


@pytest.fixture
def lab(postgres: Postgres) -> str:
    """A new database on the session's server: the lab's."""
    return postgres.create_database(f"lab_{time.monotonic_ns()}")


def _start(reports: Path, db: str, *args: str) -> subprocess.Popen[str]:
    argv = smoke_argv(reports, "--ssd-profile=quick", f"--ssd-db={db}", *args)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    return out


def _run_dir(out: str) -> Path:
    found = re.search(r"^files:\s+(\S+)$", out, re.M)
    assert found is not None, out
    return Path(found.group(1))


def _exported(db: str | Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Every table of run *run_id* as ``pytest-ssd export`` writes it."""
    tables = []
    for table in TABLES:
        argv = ["export", "--db", str(db), "--table", table, "--format=json", "--run", run_id]
        assert main(argv) == 0, capsys.readouterr().err
        tables.append(capsys.readouterr().out)
    return tables


def _report(db: str | Path, run_id: str, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out.mkdir(parents=True)  # -o names a file in a folder that exists
    assert main(["report", run_id, "--db", str(db), "-o", str(out / "report.html")]) == 0
    capsys.readouterr()
    return (out / "report.html").read_text()


def _same_run(lab: str, run_dir: Path, tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run in the lab's server is its spool, row for row, and reports the same."""
    run_id, spool = run_dir.name, run_dir / SPOOL_FILE
    server, local = open_reader(lab), open_reader(spool)
    try:
        rows = count_rows(local, run_id)
        assert count_rows(server, run_id) == rows > 20
    finally:
        server.close()
        local.close()
    assert _exported(lab, run_id, capsys) == _exported(spool, run_id, capsys)
    # each page in a folder of the same name: the paths to its figures read alike
    from_server = _report(lab, run_id, tmp / "server" / run_id, capsys)
    from_spool = _report(spool, run_id, tmp / "spool" / run_id, capsys)
    from_server = from_server.replace("/server/", "/spool/")
    if from_server != from_spool:
        at = next(
            i for i, (a, b) in enumerate(zip(from_server, from_spool, strict=False)) if a != b
        )
        pytest.fail(
            f"at {at}: {from_server[at - 400 : at + 200]!r} != {from_spool[at - 400 : at + 200]!r}"
        )


def test_four_sessions_of_two_controllers_write_one_database_at_once(
    lab: str,
    server: Sshd,
    loop_device: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two sessions on local devices (one controller) and one on two devices of a test host
    (another controller) write at once: every row is there once, each run reads as its spool."""
    devices = [loop_device(256) for _ in range(4)]
    remote = [f"--dut={server.url(str(d))}" for d in devices[2:]]
    confirm = [f"--ssd-confirm={d}" for d in devices[2:]]
    sessions = [
        *(
            _start(tmp_path / "controller-a", lab, f"--dut={d}", f"--ssd-confirm={d}")
            for d in devices[:2]
        ),
        _start(
            tmp_path / "controller-b", lab, *remote, *confirm, f"--ssd-ssh-config={server.config}"
        ),
    ]
    outs = [_finish(proc) for proc in sessions]
    run_dirs = [_run_dir(out) for out in outs]
    assert len({d.name for d in run_dirs}) == 3, "a run id each"
    for out, passed in zip(outs, (4, 4, 8), strict=True):
        assert f"{passed} passed" in out and "unreachable" not in out
    assert main(["list", "--db", lab]) == 0
    listed = capsys.readouterr().out
    assert all(d.name in listed for d in run_dirs)
    for run_dir in run_dirs:
        _same_run(lab, run_dir, tmp_path / "pages", capsys)


def _measured(url: str) -> int:
    """Measurements in the database at *url* (0 before the session made its tables)."""
    with psycopg.connect(url, autocommit=True) as pg:
        made = pg.execute("SELECT to_regclass('measurements') IS NOT NULL").fetchone()
        if not made or not made[0]:
            return 0
        row = pg.execute("SELECT count(*) FROM measurements").fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def own_server() -> Iterator[Postgres]:
    """A server of this test's alone: it is stopped in the middle of a run."""
    with local_postgres() as pg:
        yield pg


def test_the_server_stopped_mid_run_loses_nothing(
    own_server: Postgres, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = own_server.create_database("lab")
    proc = _start(tmp_path / "reports", lab, "--dut=scratch:256M")
    try:
        deadline = time.monotonic() + 300
        while _measured(lab) == 0:  # the first test's rows are in: the server goes away
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended first"
            time.sleep(0.2)
        own_server.stop("immediate")
        out = _finish(proc)
    finally:
        if proc.poll() is None:  # a failed wait: the session is ended (Ctrl-C: it cleans up)
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=120)
    assert "4 passed" in out
    said = [line for line in out.splitlines() if "lab database" in line]
    assert len(said) == 1 and "unreachable" in said[0] and "pytest-ssd sync" in said[0], out
    run_dir = _run_dir(out)
    assert "is unreachable" in (run_dir / "report.html").read_text()
    own_server.start()
    assert main(["sync", str(run_dir), "--db", lab]) == 0
    first = capsys.readouterr().out
    assert re.search(r": [1-9]\d* rows added", first), first
    assert main(["sync", str(run_dir), "--db", lab]) == 0
    assert "nothing to add" in capsys.readouterr().out
    _same_run(lab, run_dir, tmp_path / "pages", capsys)


def test_a_server_away_at_the_start_is_one_line_and_sync_uploads_the_run(
    postgres: Postgres, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    away = f"postgresql://postgres@/lab?host={tmp_path}"  # no server listens there
    out = _finish(_start(tmp_path / "reports", away, "--dut=scratch:128M"))
    said = [line for line in out.splitlines() if "lab database" in line]
    assert len(said) == 1 and "at the session's start" in said[0], out
    run_dir = _run_dir(out)
    assert (run_dir / "results.json").is_file() and (run_dir / SPOOL_FILE).is_file()
    lab = postgres.create_database(f"late_{time.monotonic_ns()}")
    assert main(["sync", str(run_dir), "--db", lab]) == 0
    assert main(["sync", str(run_dir), "--db", lab]) == 0
    assert "nothing to add" in capsys.readouterr().out.splitlines()[-1]
    _same_run(lab, run_dir, tmp_path / "pages", capsys)
