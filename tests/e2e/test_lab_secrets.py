"""A lab's database password end to end: written nowhere, kept out of the command line, and a
server refusing it stops the run at configure.

A real server (tests/pgserver.py) whose test role logs in only with its password (SCRAM),
real sessions of suites/smoke: every file the run leaves, its output and the server's whole
database (pg_dump) are searched for the password.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db.url import ENV as PYTEST_SSD_DB
from pytest_ssd.secret import masked
from tests.e2e.conftest import SsdRun, digest
from tests.e2e.test_lab_db import _measured
from tests.e2e.test_safety_config import USAGE_ERROR
from tests.pgserver import OWNER, Postgres, _tool

pytestmark = pytest.mark.usefixtures("fio_servers_one_at_a_time")


class Lab:
    """A role of the server with its password and its database (URLs without the password)."""

    def __init__(self, postgres: Postgres) -> None:
        self.server = postgres
        self.user = f"lab_{secrets.token_hex(4)}"
        self.password = f"Pw{secrets.token_hex(8)}"
        self.url = postgres.password_user(self.user, self.password)

    def with_password(self) -> str:
        return self.url.replace(f"{self.user}@", f"{self.user}:{self.password}@")

    def dump(self) -> str:
        """The whole database as SQL (every table's every row)."""
        argv = [_tool("pg_dump"), "-h", str(self.server.socket), "-U", OWNER, self.user]
        done = subprocess.run(
            ["runuser", "-u", OWNER, "--", *argv],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout

    def measured(self) -> int:
        return _measured(self.server.url(self.user))


@pytest.fixture
def lab(postgres: Postgres) -> Lab:
    return Lab(postgres)


def _out(run: SsdRun) -> str:
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    return out


def _written_nowhere(secret: str, run: SsdRun, lab: Lab, *more: Path) -> None:
    """*secret* is in no file of the run's folder, in no file *more*, not in the run's
    output, nor anywhere in the lab's database; the run is there."""
    files = [p for p in run.run_dir.rglob("*") if p.is_file()]
    assert {"results.json", "report.html", "spool.sqlite"} <= {p.name for p in files}
    for path in (*files, *more):
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in _out(run)
    dump = lab.dump()
    assert run.run_dir.name in dump and secret not in dump


def _passed(run: SsdRun, lab: Lab) -> None:
    out = _out(run)
    assert run.result.ret == 0, out
    assert "4 passed" in out and "unreachable" not in out, out
    assert lab.measured() > 0


@pytest.mark.parametrize("given", ["userinfo", "query", "ini", PYTEST_SSD_DB])
def test_a_password_in_the_url_is_written_nowhere(
    run_ssd: Any, lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """``postgresql://u:PASSWORD@…`` or ``…?password=PASSWORD`` in ``--ssd-db``, ``-o ssd_db``
    or PYTEST_SSD_DB: the run reaches the server, and neither the password nor a PGPASSWORD
    beside it (nor a token pytest-metadata would show) is recorded anywhere."""
    url = lab.with_password() if given != "query" else f"{lab.url}&password={lab.password}"
    unused = f"Env{secrets.token_hex(8)}"
    monkeypatch.setenv("PGPASSWORD", unused)  # the URL's password comes first
    monkeypatch.delenv(PYTEST_SSD_DB, raising=False)
    # what pytest-metadata puts in report.html: a CI's variable, a --metadata pair
    monkeypatch.setenv("GIT_URL", f"https://ci:{lab.password}@git.lab/ssd.git")
    metadata = ("--metadata", "deploy_token", unused)
    junit = tmp_path / "junit.xml"
    db = {"ini": ["-o", f"ssd_db={url}"], PYTEST_SSD_DB: []}.get(given, [f"--ssd-db={url}"])
    if given == PYTEST_SSD_DB:
        monkeypatch.setenv(PYTEST_SSD_DB, url)
    run = run_ssd("--dut=scratch:128M", *db, *metadata, f"--junitxml={junit}")
    _passed(run, lab)
    argv = run.results()["run"]["argv"]
    assert all(arg in argv for arg in masked(db)), argv
    _written_nowhere(lab.password, run, lab, junit)
    _written_nowhere(unused, run, lab, junit)


@pytest.mark.parametrize("kept", ["PGPASSWORD", "pgpass", "PGSERVICE"])
def test_a_password_kept_out_of_the_command_line_reaches_the_server(
    run_ssd: Any,
    lab: Lab,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    kept: str,
) -> None:
    """What docs/database.md recommends: the URL names no password, libpq finds it in the
    environment, ``~/.pgpass`` or a service's file; nothing records it."""
    url = lab.url
    socket = lab.server.socket
    if kept == "PGPASSWORD":
        monkeypatch.setenv("PGPASSWORD", lab.password)
    else:  # ~/.pgpass (pytester's HOME), mode 0600 or libpq ignores it
        pgpass = pytester.path / ".pgpass"
        pgpass.write_text(f"{socket}:*:{lab.user}:{lab.user}:{lab.password}\n")
        pgpass.chmod(0o600)
        monkeypatch.setenv("HOME", str(pytester.path))
    if kept == "PGSERVICE":  # the service names the server, database and user
        services = pytester.path / "pg_service.conf"
        services.write_text(f"[lab]\nhost={socket}\ndbname={lab.user}\nuser={lab.user}\n")
        monkeypatch.setenv("PGSERVICEFILE", str(services))
        url = "postgresql://?service=lab"
    monkeypatch.delenv(PYTEST_SSD_DB, raising=False)
    run = run_ssd("--dut=scratch:128M", f"--ssd-db={url}")
    _passed(run, lab)
    _written_nowhere(lab.password, run, lab)


def test_a_wrong_password_is_refused_at_configure(
    run_ssd: Any, lab: Lab, random_loop: Path, tmp_path: Path
) -> None:
    """The server refuses the login: one line, exit 4, before any test (a server away is
    'spool and go on': test_lab_db)."""
    wrong = f"Wrong{secrets.token_hex(8)}"
    url = lab.url.replace(f"{lab.user}@", f"{lab.user}:{wrong}@")
    before = digest(random_loop)
    run = run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}", f"--ssd-db={url}")
    out = _out(run)
    assert run.result.ret == USAGE_ERROR, out
    errors = [line for line in run.result.errlines if "error:" in line.lower()]
    assert len(errors) == 1, run.result.errlines
    assert f'password authentication failed for user "{lab.user}"' in errors[0]
    assert wrong not in out and "passed" not in out, out
    assert digest(random_loop) == before, "nothing written"
    # nothing recorded: the run folder itself is left to the refusal's clean-up (item 4)
    reports = tmp_path / "reports"
    assert not [p for p in reports.rglob("results.json")]
    assert lab.measured() == 0
