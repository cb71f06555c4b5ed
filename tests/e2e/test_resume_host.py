"""--ssd-resume after a test host was lost: its sshd stopped mid-run, started again before the
resume.

suites/csd (quick) runs on a loop device reached through a real sshd on 127.0.0.1
(tests/sshd.py); once tests are recorded, that sshd and its connections' sshd
processes are killed.  The run must stop by itself in one line naming the host,
recording no failure for the test cut short and leaving the run unfinished, so
that ``--ssd-resume=last`` continues it once the host is back.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import kill_everything_of
from tests.e2e.test_resume import BROKEN, TESTS, _argv, _ended, _rows, _run, _said, _same_as
from tests.sshd import Sshd, end_left, local_sshd, restarted, stop_sshd

#: tests recorded before the host is lost (of the 4 fob points)
RECORDED_BEFORE = 2
RECORDED = "SELECT count(*) FROM tests"


def _on_host(server: Sshd, dev: Path) -> tuple[str, str, str]:
    """The device through *server*, and the options every run of it takes."""
    return (server.url(str(dev)), f"--ssd-confirm={dev}", f"--ssd-ssh-config={server.config}")


def _host_lost(server: Sshd, dev: Path, reports: Path, *args: str) -> tuple[str, list[str]]:
    """A run whose host's sshd is stopped once tests are recorded: its output, and what the
    host's logins had started there that did not end by itself (killed then)."""
    url, *options = _on_host(server, dev)
    reports.mkdir(parents=True)
    log = reports / "lost.log"
    left: dict[int, str] = {}
    with log.open("w") as out:
        proc = subprocess.Popen(
            _argv(url, reports, *options, *args), stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 600
        while (
            _rows(reports, RECORDED) < RECORDED_BEFORE
            and proc.poll() is None
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before its host was lost:\n" + log.read_text()
        left = stop_sshd(server)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        kill_everything_of(reports)
        survivors = end_left(left, 60)
    return log.read_text(), survivors


@pytest.mark.parametrize("args", [(), ("-n", "2")], ids=["one-process", "workers"])
def test_a_run_whose_host_was_lost_stops_and_resumes_once_the_host_is_back(
    args: tuple[str, ...],
    loop_device: Any,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    dev = loop_device(256)
    with local_sshd(tmp_path / "host") as server:
        url, *options = _on_host(server, dev)
        reference = _run(url, tmp_path / "reference", *options)
        assert len(reference.outcomes) == TESTS and set(reference.outcomes.values()) == {"passed"}
        reports = tmp_path / "lost"
        output, survivors = _host_lost(server, dev, reports, *args)
    assert not any(word in output for word in BROKEN), output
    stopped = [line for line in output.splitlines() if "pytest-ssd stopped the run" in line]
    where = f"ssh root@127.0.0.1 port {server.port}: the test host's connection was lost during "
    assert len(stopped) == 1 and where in stopped[0], output
    cut = _ended(reports, 0.0, output)
    assert cut.complete == 0, output  # unfinished: it can be resumed
    assert set(cut.outcomes.values()) == {"passed"}, cut.outcomes  # the cut test: no failure
    assert len(cut.outcomes) >= RECORDED_BEFORE, cut.outcomes
    # what the host's logins ran there (the lock holder, the agent, fio) ended with them
    assert survivors == []
    with restarted(server):
        resumed = _run(url, reports, "--ssd-resume=last", *options, *args)
    assert f"resuming run {cut.run_ids[0]}" in resumed.output, resumed.output
    _same_as(resumed, reference)
    said = _said(f"its test host's sshd was stopped mid-run {args}", resumed, reference)
    print(said)
    record_property("wall_times", said)
