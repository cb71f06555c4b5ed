"""Secrets are masked wherever the command line or the environment is written, and a server
that refuses the login is told apart from a server away (a real server: tests/pgserver.py)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pytest_ssd.db.conn import Refused, Unreachable, pg_error
from pytest_ssd.db.opening import open_reader, open_writer
from pytest_ssd.db.url import db_url
from pytest_ssd.results.runinfo import collect
from pytest_ssd.secret import masked, masked_text
from tests.pgserver import Postgres

MASKED_TEXT = {
    "postgresql://lab:S3cret@results.lab/ssd": "postgresql://lab:***@results.lab/ssd",
    "--ssd-db=postgres://lab:a:b?c@h,h2:5433/ssd": "--ssd-db=postgres://lab:***@h,h2:5433/ssd",
    "postgresql://lab@/ssd?host=/run/pg&password=S3cret&sslmode=require": (
        "postgresql://lab@/ssd?host=/run/pg&password=***&sslmode=require"
    ),
    "postgresql:///ssd?sslpassword=S3cret": "postgresql:///ssd?sslpassword=***",
    "ssd_db=host=h password='a b' user=lab": "ssd_db=host=h password=*** user=lab",
    "--vendor-token=S3cret": "--vendor-token=***",
    "PGPASSWORD=S3cret": "PGPASSWORD=***",
    # nothing to hide
    "--ssd-db=postgresql://lab@results.lab/ssd": "--ssd-db=postgresql://lab@results.lab/ssd",
    "ssh://root@host/dev/nvme0n1": "ssh://root@host/dev/nvme0n1",
    "-k": "-k",
    "password and not token": "password and not token",
    "--ssd-confirm=/dev/loop1": "--ssd-confirm=/dev/loop1",
}


@pytest.mark.parametrize(("given", "shown"), list(MASKED_TEXT.items()))
def test_a_secret_in_a_text_is_masked(given: str, shown: str) -> None:
    assert masked_text(given) == shown
    if given.startswith("postgresql://"):  # messages name a database so
        assert str(db_url(given)) == shown


def test_the_recorded_environment_masks_every_secret_of_the_command_line() -> None:
    args = [
        "--ssd-db=postgresql://lab:S3cret@h/ssd",
        "--token",
        "S3cret",
        "-o",
        "ssd_db=postgresql://h/ssd?password=S3cret",
        "--metadata",
        "api_key",
        "S3cret",
        "--dut=scratch:128M",
    ]
    environment = collect(args)
    assert "S3cret" not in repr(environment)
    assert environment["argv"][-9:] == [
        "--ssd-db=postgresql://lab:***@h/ssd",
        "--token",
        "***",
        "-o",
        "ssd_db=postgresql://h/ssd?password=***",
        "--metadata",
        "api_key",
        "***",
        "--dut=scratch:128M",
    ]
    assert masked({"api_key": "S3cret", "nested": ("x", {"password": ""})}) == {
        "api_key": "***",
        "nested": ("x", {"password": ""}),
    }


def test_a_power_controllers_command_is_written_as_its_program_alone() -> None:
    """``ipmitool -P PASSWORD``: a tool's password flag cannot be known by its name, so a
    command pytest-ssd runs is recorded without its arguments, whichever way it is given."""
    command = "ipmitool -I lanplus -H bmc -U admin -P S3cret chassis power cycle"
    args = [f"--ssd-power-cycle={command}", "--ssd-power-cycle", command, "-k", "power"]
    environment = collect(args)
    assert "S3cret" not in repr(environment)
    assert environment["argv"][-5:] == [
        "--ssd-power-cycle=ipmitool ***",
        "--ssd-power-cycle",
        "ipmitool ***",
        "-k",
        "power",
    ]
    assert masked_text("--ssd-power-cycle=/usr/local/bin/cut-power") == (
        "--ssd-power-cycle=/usr/local/bin/cut-power"
    )


def test_a_server_refusing_the_login_is_not_a_server_away(
    postgres: Postgres, tmp_path: Path
) -> None:
    url = postgres.password_user("login_test", "S3cret")
    refused = {
        "wrong password": url.replace("login_test@", "login_test:wrong@"),
        "no password": url,
        "unknown role": url.replace("login_test@", "nobody:S3cret@"),
        "unknown database": url.replace("/login_test?", "/nothere?").replace("@", ":S3cret@"),
    }
    for what, given in refused.items():
        for open_db in (open_writer, open_reader):
            with pytest.raises(Refused) as caught:
                open_db(given)
            line = str(caught.value)
            assert "\n" not in line and "wrong" not in line, what
            assert "the server refused the login" in line, line
    away = f"postgresql://login_test:S3cret@/login_test?host={tmp_path}"
    with pytest.raises(Unreachable):
        open_writer(away)
    open_writer(url.replace("login_test@", "login_test:S3cret@")).close()


#: what libpq says of a server whose pg_hba.conf has no line for the login, and of a server
#: that is starting (away for a moment: the run goes on in its spool)
NO_ENTRY = (
    'connection failed: connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed:'
    ' FATAL:  no pg_hba.conf entry for host "[local]", user "lab", database "ssd", no encryption'
)
STARTING = (
    'connection failed: connection to server at "10.0.0.5", port 5432 failed:'
    " FATAL:  the database system is starting up"
)


def test_no_pg_hba_entry_is_refused_and_a_starting_server_is_away() -> None:
    assert isinstance(pg_error("lab", psycopg.OperationalError(NO_ENTRY)), Refused)
    assert isinstance(pg_error("lab", psycopg.OperationalError(STARTING)), Unreachable)
