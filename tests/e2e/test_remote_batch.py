"""Batched point tests on a test host: the gates and fio processes are the host's batch agent's.

A real sshd on 127.0.0.1 (tests/sshd.py) is the test host: its processes and
folders are this machine's, so what is left "there" is looked for here.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.fio.results import parse_output
from tests.e2e.conftest import REPO, digest
from tests.e2e.test_safety_claim import REMAKE, kept_node
from tests.own import is_fio, tagged
from tests.sshd import Sshd

LoopFactory = Callable[..., Path]
CSD = REPO / "suites" / "csd"
#: the low-QD points at QD 1: 2 patterns x 2 rounds x 0, 70, 100 % read
LOW_QD1 = ("-k", "low and qd1")


def _server_folder(text: str) -> str | None:
    found = re.search(r"/tmp/ssd-fio\.[A-Za-z0-9]+(?=/)", text)  # a path inside one
    return found.group(0) if found else None


def _batch_fio(server: Sshd) -> dict[int, str]:
    """fio processes of a batch on *server*'s host (a job file in a batch's folder of one of its
    fio servers), by the tag its logins carry (tests/own.py)."""
    return {
        pid: cmdline
        for pid, cmdline in server.processes().items()
        if _server_folder(cmdline) and is_fio(cmdline) and "/b" in cmdline
    }


def _host_args(server: Sshd, dev: Path) -> tuple[str, ...]:
    return (
        f"--dut={server.url(str(dev))}",
        f"--ssd-confirm={dev}",
        f"--ssd-ssh-config={server.config}",
    )


def test_low_qd_points_on_a_host_are_batched_with_fios_own_figures(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any
) -> None:
    dev = loop_device(1024)
    run = run_ssd(*_host_args(server, dev), *LOW_QD1, suite=CSD, timeout=900)
    out = run.result.stdout.str() + run.result.stderr.str()
    assert run.result.ret == 0, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    run.result.assert_outcomes(passed=12)
    assert "unbatched" not in out and "fio batch failed" not in out
    batches = sorted((run.run_dir / "artifacts").glob("batch-*"))
    # the points of each round (RND, SEQ) started together, a batch per round
    assert len(batches) == 2 and all("-qd1-r0" in b.name for b in batches), batches
    # every point's figures are its own fio process's JSON, fetched from the host
    measured = run.results()["measurements"]
    assert len(measured) == 12 * 3
    for m in measured:
        folder = run.run_dir / m["artifacts"]
        assert folder.parent in batches, m["artifacts"]
        job = parse_output((folder / "fio.stdout").read_text()).job(m["name"])
        for direction, metrics in m["metrics"].items():
            fio = job.directions[direction]
            assert metrics["io_bytes"] == fio.io_bytes and metrics["iops"] == fio.iops, m["name"]
    artifacts = run.run_dir / "artifacts"
    tests = [p for p in artifacts.iterdir() if "test_low_qd" in p.name and p not in batches]
    assert len(tests) == 12 and not [p for t in tests for p in t.rglob("fio.cmd")], (
        "no point ran as its own fio --client"
    )
    assert server.settled() == [], "no fio, gate, agent or folder is left on the host"


def _start(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )


def _wait_for_batch(
    proc: subprocess.Popen[bytes], server: Sshd, seconds: float = 600
) -> dict[int, str]:
    """The batch's fio processes on the host once one of them runs a point's I/O."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, "pytest ended before its batch ran"
        found = _batch_fio(server)
        if len(found) >= 2:
            return found
        time.sleep(0.2)
    pytest.fail("no batch started on the host")


@pytest.fixture
def csd_on_host(
    server: Sshd, loop_device: LoopFactory, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    dev = loop_device(1024)

    def start(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            str(CSD),
            *_host_args(server, dev),
            *LOW_QD1,
            "--ssd-profile=quick",
            "-p",
            "no:cacheprovider",
            f"--ssd-report-dir={tmp_path / 'reports'}",
            f"--rootdir={REPO}",
        ]
        started.append(_start(argv, env))
        return started[-1]

    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def test_kill_9_of_pytest_mid_batch_leaves_nothing_on_the_host(
    server: Sshd, csd_on_host: Callable[..., subprocess.Popen[bytes]]
) -> None:
    proc = csd_on_host()
    assert _wait_for_batch(proc, server)
    proc.kill()  # pytest alone, as kill -9: what it started learns it from its pipes
    proc.wait(timeout=60)
    assert server.settled() == [], "no fio, gate, agent or folder is left on the host"


def test_a_lost_connection_mid_batch_leaves_nothing_on_the_host(
    server: Sshd, csd_on_host: Callable[..., subprocess.Popen[bytes]], test_tag: str
) -> None:
    proc = csd_on_host()
    assert _wait_for_batch(proc, server)
    port = f" -p {server.port} "
    # the session's master: a process of this test's (its tag), not another session's
    mine = [
        pid for pid, cmdline in tagged(test_tag).items() if " -M -N " in cmdline and port in cmdline
    ]
    assert mine, "the session's master connection"
    for pid in mine:
        os.kill(pid, signal.SIGKILL)  # the connection is gone, pytest runs on
    assert server.settled() == [], "no fio, gate, agent or folder is left on the host"


def test_a_controller_silent_mid_batch_leaves_nothing_on_the_host(
    server: Sshd, csd_on_host: Callable[..., subprocess.Popen[bytes]]
) -> None:
    proc = csd_on_host({"PYTEST_SSD_BATCH_IDLE_S": "3"})
    assert _wait_for_batch(proc, server)
    os.killpg(proc.pid, signal.SIGSTOP)  # the controller (and its ssh) stop saying anything
    try:
        deadline = time.monotonic() + 60
        while _batch_fio(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _batch_fio(server), "the agent ended its batch after 3 s without a word"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        os.killpg(proc.pid, signal.SIGCONT)
    assert server.settled() == [], "no fio, gate, agent or folder is left on the host"


POINTS = """
import pytest
from pytest_ssd.fio.job import FioJob


def points(profile):
    return [pytest.param(n, id=f"p{n}", marks=pytest.mark.dut_state("fob")) for n in range(3)]


def jobs_of(ssd, n):
    return [FioJob(f"w{n}", "rnd", 4096, size=16 << 20, io_bytes=4 << 20, read_pct=0)]


@pytest.mark.ssd_points("n", points, jobs=jobs_of)
def test_point(ssd, n):
    (job,) = jobs_of(ssd, n)
    ssd.run(job)
"""

#: after the first point, the DUT's node (on the host: here) is re-made to point at another
#: device while the batch's next fio waits at its gates
REMAKE_AFTER_P0 = REMAKE.replace("::test_first[", "-p0]")


def test_a_node_remade_mid_batch_on_a_host_stops_the_run_at_the_next_release(
    server: Sshd, random_loop: Path, loop_device: LoopFactory, tmp_path: Path, run_ssd: Any
) -> None:
    other = loop_device(64, "never-named.img")  # never named, never confirmed
    with other.open("wb") as fh:
        fh.write(os.urandom(64 << 20))
    before = digest(other)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_points.py").write_text(POINTS)
    with kept_node(random_loop) as st:
        conftest = REMAKE_AFTER_P0.format(
            node=str(random_loop), mode=st.st_mode, rdev=other.stat().st_rdev
        )
        (suite / "conftest.py").write_text(conftest)
        run = run_ssd(*_host_args(server, random_loop), suite=suite)
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert len(list((run.run_dir / "artifacts").glob("batch-*"))) == 1, "the points were batched"
    run.result.assert_outcomes(passed=1, failed=1)
    now = other.stat().st_rdev
    stop = (
        f"pytest-ssd stopped the run: refusing to write to {random_loop}: it is no longer the"
        f" device identified, confirmed and locked (it is device number"
        f" {os.major(now)}:{os.minor(now)} now, device number"
    )
    assert any(stop in line for line in run.result.outlines), out
    assert "-p2]" not in "".join(run.result.outlines), "no point after the stop"
    assert digest(other) == before, "the batch's next job never wrote to the other device"
    assert server.settled() == [], "no fio, gate, agent or folder is left on the host"
