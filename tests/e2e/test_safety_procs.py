"""No process outlives its session, a stalled fio is stopped, a slow host's fio server is
cleaned up: through the real plugin, with real fio on loop devices and a local sshd.

A hung drive is played by SIGSTOP of fio's job processes: they complete no I/O and,
continued, would go on writing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import FioError
from pytest_ssd.fio.batch import Batch
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.server import START_ENV
from pytest_ssd.fio.watch import STALL_ENV
from pytest_ssd.fio.watch import counters as counters_of
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.proc.sweep import MARK_ENV
from tests.e2e.conftest import digest
from tests.e2e.test_safety_session import _popen, _wait_for
from tests.fake_machine import HERE
from tests.sshd import Sshd, local_sshd

LoopFactory = Callable[..., Path]
#: the shortened stall allowance of these runs (the default is a minute or two)
STALL_S = 4


def _said(out: str, said: str) -> list[str]:
    """The lines of *out* holding *said*, but pytest's short summary (whole under CI=true)."""
    return [line for line in out.splitlines() if said in line and not line.startswith("FAILED ")]


def _clean(out: str) -> None:
    assert "Traceback" not in out and "INTERNALERROR" not in out, out


def _suite(tmp_path: Path, tests: str) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_it.py").write_text(tests)
    return suite


def _argv(suite: Path, reports: Path, dev: Path, *args: str, url: str | None = None) -> list[str]:
    """A run of *suite* on *dev* (reached at *url*, a test host's, if given)."""
    return [
        sys.executable,
        "-m",
        "pytest",
        str(suite),
        f"--dut={url or dev}",
        f"--ssd-confirm={dev}",
        "--ssd-profile=quick",
        "-p",
        "no:cacheprovider",
        f"--ssd-report-dir={reports}",
        f"--rootdir={suite}",
        *args,
    ]


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process now."""
    found = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            if entry.name.isdigit():
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                found[int(entry.name)] = (parent, (entry / "cmdline").read_bytes().decode())
    return found


def _fio(needle: str) -> list[int]:
    """fio processes whose command line names *needle*."""
    return [
        pid
        for pid, (_, cmdline) in _processes().items()
        if cmdline.split("\0")[0].endswith("fio") and needle in cmdline
    ]


def _fio_jobs(needle: str) -> list[int]:
    """fio's job processes (forked by a fio of *needle*)."""
    every = _processes()
    fio = set(_fio(needle))
    return [pid for pid in fio if every.get(pid, (0, ""))[0] in fio]


def _token(pid: int) -> str | None:
    with contextlib.suppress(OSError):
        for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if entry.startswith(f"{MARK_ENV}=".encode()):
                return entry.decode().partition("=")[2]
    return None


def _carrying(token: str) -> list[int]:
    needle = f"{MARK_ENV}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


def _stop(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)


def _cont(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


@pytest.fixture
def stall_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STALL_ENV, str(STALL_S))


LONG_WRITE = """
from pytest_ssd.fio.job import FioJob


def test_long_write(ssd):
    # by amount: it used to get 6 h whatever its size
    ssd.run(FioJob("long-write", "rnd", 4096, read_pct=0, size=32 << 20, io_bytes=64 << 30))


def test_after(ssd):
    job = FioJob("after", "rnd", 4096, size=16 << 20, runtime_s=0.5)
    assert ssd.run(job).directions["read"].io_bytes > 0
"""


#: a write planned short (its line by elapsed time, shown after 10 s) that stalls longer
SHORT_WRITE = LONG_WRITE.replace(
    'FioJob("long-write", "rnd", 4096, read_pct=0, size=32 << 20, io_bytes=64 << 30)',
    'FioJob("long-write", "rnd", 4096, read_pct=0, size=32 << 20, runtime_s=3)',
)


@pytest.fixture
def stopped_jobs() -> Iterator[list[int]]:
    """The fio job processes a test stopped: continued at the end whatever happened."""
    stopped: list[int] = []
    yield stopped
    _cont(stopped)


@pytest.mark.parametrize(
    ("tests", "stall_s"), [(LONG_WRITE, STALL_S), (SHORT_WRITE, 12)], ids=["long", "short"]
)
def test_a_stalled_fio_fails_its_test_in_one_line_and_the_session_goes_on(  # noqa: PLR0917
    loop_device: LoopFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stopped_jobs: list[int],
    tests: str,
    stall_s: int,
) -> None:
    monkeypatch.setenv(STALL_ENV, str(stall_s))
    dev = loop_device(64)
    reports = tmp_path / "reports"
    proc = _popen(_argv(_suite(tmp_path, tests), reports, dev), tmp_path)
    try:
        _wait_for(lambda: bool(_fio_jobs(str(reports))) or proc.poll() is not None, "fio's jobs")
        stopped_jobs += _fio_jobs(str(reports))
        _stop(stopped_jobs)
        stalled = time.monotonic()
        out = proc.communicate(timeout=stall_s + 120)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    took = time.monotonic() - stalled
    _clean(out)
    assert re.search(r"1 failed, 1 passed", out), out
    said = f"fio made no progress on {dev} for {stall_s} s (no I/O completed"
    lines = _said(out, said)
    assert len(lines) == 1 and lines[0].endswith("; stopped"), out
    assert took < stall_s + 60, f"the stall was stopped after {took:.0f} s"
    # its progress line ends saying it did not finish: never "done in"
    closing = [line for line in out.splitlines() if re.match(r"\S+ long-write: \w", line)]
    assert len(closing) >= 1 and "long-write: done" not in out, out
    assert re.fullmatch(r"\S+ long-write: stopped after 0:00:\d\d, not done.*", closing[-1]), out
    assert not _fio(str(reports)), "fio is gone"
    assert all(not Path(f"/proc/{pid}").exists() for pid in stopped_jobs)


def test_a_bad_stall_allowance_is_refused_in_one_line(
    loop_device: LoopFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dev = loop_device(64)
    monkeypatch.setenv(STALL_ENV, "soon")
    argv = _argv(_suite(tmp_path, LONG_WRITE), tmp_path / "reports", dev)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 4, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert errors == [f"ERROR: {STALL_ENV}='soon': give seconds between 1 and 86400"], done.stderr
    assert not (tmp_path / "reports").exists()


def _started(argv: list[str], reports: Path, cwd: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """Start a run and wait for fio's jobs: the run and the jobs."""
    proc = _popen(argv, cwd)
    _wait_for(lambda: bool(_fio_jobs(str(reports))) or proc.poll() is not None, "fio's jobs")
    assert proc.poll() is None, proc.communicate()[0]
    return proc, _fio_jobs(str(reports))


def _start_and_stop_jobs(
    argv: list[str], reports: Path, cwd: Path, stopped: list[int]
) -> tuple[subprocess.Popen[str], str | None]:
    """Start a run, wait for fio's jobs and stop them (SIGSTOP); the run and its mark."""
    proc, jobs = _started(argv, reports, cwd)
    stopped += jobs
    _stop(jobs)
    return proc, _token(jobs[0])


def test_sigterm_while_fio_is_stopped_leaves_nothing_that_could_write(
    loop_device: LoopFactory, tmp_path: Path, stopped_jobs: list[int]
) -> None:
    dev = loop_device(64)
    reports = tmp_path / "reports"
    argv = _argv(_suite(tmp_path, LONG_WRITE), reports, dev)
    proc, token = _start_and_stop_jobs(argv, reports, tmp_path, stopped_jobs)
    try:
        proc.send_signal(signal.SIGTERM)  # pytest alone
        out = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    _clean(out)
    before = digest(dev)
    _cont(stopped_jobs)  # had a job survived, it would write now
    time.sleep(2)
    assert digest(dev) == before, "nothing was written after the session ended"
    assert not _fio(str(reports))
    assert token is not None, "fio carries the session's mark"
    assert _carrying(token) == [], "no process of the session is left"


def test_kill_9_of_pytest_leaves_nothing_within_the_grace_period(
    loop_device: LoopFactory, tmp_path: Path, stopped_jobs: list[int]
) -> None:
    dev = loop_device(64)
    suite = _suite(tmp_path, LONG_WRITE)
    for attempt in range(3):  # the first with fio's jobs stopped, the others running
        reports = tmp_path / f"reports-{attempt}"
        argv = _argv(suite, reports, dev)
        if attempt == 0:
            proc, token = _start_and_stop_jobs(argv, reports, tmp_path, stopped_jobs)
        else:
            proc, jobs = _started(argv, reports, tmp_path)
            token = _token(jobs[0])
        proc.kill()
        proc.communicate(timeout=60)
        # the reaper's grace: SIGTERM, 5 s, SIGKILL (a stopped job: SIGKILL at once)
        _wait_for(lambda r=reports: not _fio(str(r)), "fio ending", limit=15)
        assert token is not None, "fio carries the session's mark"
        assert _carrying(token) == [], "no process of the session is left"


SLOW_FIO = """#!/bin/sh
# the host's fio: its server is slow to start the first time (a loaded host)
case "$*" in *--server=*)
  if [ ! -e "{flag}" ]; then : > "{flag}"; sleep 12; fi;;
esac
exec {fio} "$@"
"""

TWO_READS = """
from pytest_ssd.fio.job import FioJob


def test_first(ssd):
    assert ssd.run(FioJob("first", "rnd", 4096, size=16 << 20, runtime_s=0.3)).directions


def test_second(ssd):
    assert ssd.run(FioJob("second", "rnd", 4096, size=16 << 20, runtime_s=0.3)).directions
"""


def _server_left(folder: str) -> list[int]:
    """The host's (this machine's) processes of the fio server of *folder*."""
    return [
        pid
        for pid, (_, cmdline) in _processes().items()
        if f"--server=sock:{folder}/" in cmdline.replace("\0", " ")
    ]


def test_a_slow_fio_server_start_is_cleaned_up_and_tried_again(
    loop_device: LoopFactory, run_ssd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fio = shutil.which("fio")
    assert fio is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fio").write_text(SLOW_FIO.format(flag=tmp_path / "slow-once", fio=fio))
    (bin_dir / "fio").chmod(0o755)
    monkeypatch.setenv(START_ENV, "3")
    dev = loop_device(64)
    path = f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    with local_sshd(tmp_path / "sshd", path=path) as host:
        suite = _suite(tmp_path, TWO_READS)
        config = f"--ssd-ssh-config={host.config}"
        run = run_ssd(f"--dut={host.url(str(dev))}", f"--ssd-confirm={dev}", config, suite=suite)
        out = run.result.stdout.str() + run.result.stderr.str()
        _clean(out)
        run.result.assert_outcomes(failed=1, passed=1)
        said = (
            f"ssh root@127.0.0.1 port {host.port}: fio --server did not listen within 3 s"
            " (a slow or overloaded host); stopped it there and removed /tmp/ssd-fio."
        )
        lines = _said(out, said)
        assert len(lines) == 1 and "test_first" in out.split(said)[0].rsplit("___ ", 1)[-1], out
        assert "connection lost" not in out
    folder = re.findall(r"removed (/tmp/ssd-fio\.\w+)", lines[0])[0]
    assert not Path(folder).exists(), "the slow server's folder is removed on the host"
    assert _server_left(folder) == [], "and no process of it is left there"


def _host_jobs(host: Sshd) -> list[int]:
    """fio's job processes of the servers the test's sshd started (by its logins' tag, no
    other session's on this machine)."""
    mine = host.processes()
    return [pid for pid in _fio_jobs("--server=sock:/tmp/ssd-fio.") if pid in mine]


def test_a_stalled_fio_on_a_host_fails_its_test_and_its_jobs_end_there(
    loop_device: LoopFactory, tmp_path: Path, stall_env: None, stopped_jobs: list[int]
) -> None:
    dev = loop_device(64)
    reports = tmp_path / "reports"
    with local_sshd(tmp_path / "sshd") as host:
        config = f"--ssd-ssh-config={host.config}"
        argv = _argv(_suite(tmp_path, LONG_WRITE), reports, dev, config, url=host.url(str(dev)))
        proc = _popen(argv, tmp_path)
        try:
            _wait_for(lambda: bool(_host_jobs(host)) or proc.poll() is not None, "fio's jobs")
            stopped_jobs += _host_jobs(host)
            _stop(stopped_jobs)
            out = proc.communicate(timeout=STALL_S + 120)[0]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate(timeout=30)
        _clean(out)
        assert re.search(r"1 failed, 1 passed", out), out
        where = f"{dev} (ssh root@127.0.0.1 port {host.port})"
        said = f"fio made no progress on {where} for {STALL_S} s (no I/O completed"
        assert len(_said(out, said)) == 1, out
        assert all(not Path(f"/proc/{pid}").exists() for pid in stopped_jobs), "ended there"


LEFT_BEHIND = """
import os, subprocess, sys
from pathlib import Path
from pytest_ssd.fio.job import FioJob


def test_leaves_a_process_of_its_server(ssd):
    assert ssd.run(FioJob("read", "rnd", 4096, size=16 << 20, runtime_s=0.3)).directions
    # the server of this session's sshd (not another's on this machine)
    below, todo = set(), [int(os.environ["SSHD_PID"])]
    while todo:
        pid = todo.pop()
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        below |= set(map(int, kids))
        todo += map(int, kids)
    lines = [Path(f"/proc/{p}/cmdline").read_bytes().decode() for p in below]
    (arg,) = {a for line in lines for a in line.split("\\0") if a.startswith("--server=sock:")}
    # one the host's clean-up cannot end (as one in D state): respawned by a shell whose own
    # command line does not match
    loop = 'while :; do "$PY" -c "import time; time.sleep(120)" "$ARG"; done'
    env = dict(os.environ, PY=sys.executable, ARG=arg)
    planted = subprocess.Popen(["sh", "-c", loop], env=env, start_new_session=True)
    Path(os.environ["PLANTED"]).write_text(str(planted.pid))
"""


def test_fio_left_on_a_host_is_said_once(
    loop_device: LoopFactory,
    run_ssd: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dev = loop_device(64)
    planted = tmp_path / "planted"
    monkeypatch.setenv("PLANTED", str(planted))
    with local_sshd(tmp_path / "sshd") as host:
        monkeypatch.setenv("SSHD_PID", (host.folder / "sshd.pid").read_text().strip())
        url, config = host.url(str(dev)), f"--ssd-ssh-config={host.config}"
        try:
            suite = _suite(tmp_path, LEFT_BEHIND)
            run = run_ssd(f"--dut={url}", f"--ssd-confirm={dev}", config, suite=suite)
        finally:
            if planted.exists():
                os.killpg(int(planted.read_text()), signal.SIGKILL)
    out = run.result.stdout.str() + "\n" + run.result.stderr.str()
    _clean(out)
    run.result.assert_outcomes(passed=1)
    lines = [line for line in out.splitlines() if "were left running" in line]
    assert len(lines) == 1, out
    assert re.fullmatch(
        rf"pytest-ssd: ssh root@127.0.0.1 port {host.port}: fio processes \d+ were left running",
        lines[0],
    ), lines


def _jobs_in(folder: Path) -> list[int]:
    """fio's job processes working in *folder* (a batch's, the agent's)."""
    return [p for p in _fio_jobs("fio.job") if Path(f"/proc/{p}/cwd").resolve() == folder]


def test_a_stalled_batched_point_is_stopped_in_one_line(
    loop_device: LoopFactory, tmp_path: Path, stall_env: None, stopped_jobs: list[int]
) -> None:
    dev, folder = loop_device(64), tmp_path / "batch"
    job = FioJob("point", "rnd", 4096, read_pct=0, size=32 << 20, io_bytes=64 << 30)
    failed: list[BaseException] = []
    with Batch([job], dev, artifacts=folder, gates=HERE.batch_gates(str(dev), None)) as batch:

        def release() -> None:
            try:
                batch.run(job)
            except FioError as exc:
                failed.append(exc)

        counters = counters_of(LOCAL, str(dev))
        assert counters is not None
        before = counters()
        worker = threading.Thread(target=release)
        worker.start()
        # released: its I/O under way (stopped at its gate, it would never be released)
        _wait_for(lambda: counters() != before or not worker.is_alive(), "the point's I/O")
        mine = _jobs_in(Path(batch.gates.folder))  # where the agent runs the batch's fio
        stopped_jobs += mine
        _stop(mine)
        worker.join(timeout=STALL_S + 60)
    assert not worker.is_alive()
    assert [str(exc) for exc in failed] == [
        f"fio made no progress on {dev} for {STALL_S} s (no I/O completed: the device or its"
        " driver hangs); stopped"
    ]
    assert all(not Path(f"/proc/{pid}").exists() for pid in mine)
