"""fio's failures in words: a lost server is said as such, not as fio's last line."""

from __future__ import annotations

from pathlib import Path

from pytest_ssd.fio.engine import exited
from pytest_ssd.proc import Completed

GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
WHERE = "/dev/loop13 (ssh root@lab-7)"


def test_a_server_lost_mid_run_is_said_in_words() -> None:
    stdout = (GOLDEN / "client_disconnected.txt").read_text()
    said = exited(Completed(("fio",), 1, stdout, "", 2.0), WHERE)
    assert said == (
        f"fio exited 1 on {WHERE}: the fio server (fio.sock) disconnected while the jobs ran"
        " (the server process ended, or the host or its connection went away):"
        " treat the device's contents as unknown"
    )


def test_a_server_that_cannot_be_reached_is_said_in_words() -> None:
    stderr = "fio: connect: Connection refused\n"
    said = exited(Completed(("fio",), 1, "", stderr, 0.1), WHERE)
    assert said.endswith(
        "fio could not reach its server (Connection refused): it is gone, or the host is"
        " unreachable"
    )


def test_any_other_failure_keeps_fios_last_word() -> None:
    stderr = "fio: pid=123, err=5/file:io_u.c:1845, func=io_u error, error=Input/output error\n"
    said = exited(Completed(("fio",), 1, "{\n}\n", stderr, 0.1), WHERE)
    assert said == f"fio exited 1 on {WHERE}: {stderr.strip()}"
