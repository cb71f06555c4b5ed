"""The guard on a test host refuses what it cannot read, and says what is wrong in one line.

A real sshd on 127.0.0.1 (tests/sshd.py) is the test host; a ``ForceCommand``
wrapper makes it a busy, broken or slow one: a small stack (so an argument list
of every open descriptor would be too long), an unreadable ``/proc``, a ``PATH``
without ``wipefs`` or ``find``, a lock that does not answer.  Every refusal
leaves the device byte-identical and makes no run folder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.machine.hostfacts import FAILED, RESCAN
from pytest_ssd.machine.hostlocks import ACQUIRE_TIMEOUT_S
from tests.e2e.conftest import digest, kill_everything_of, smoke_argv
from tests.e2e.test_safety_session import _one_error, _wait_for
from tests.sshd import Sshd, local_sshd

#: their runs start fio servers on the host: they take turns with the tests that count them

#: descriptors a helper holds open: with a 1 MiB stack (256 KiB of arguments) one
#: ``stat /proc/[0-9]*/fd/*`` of them all is too long; a host with 70,000 is the same
BUSY_FDS = 12_000
HOLD_FDS = """
import os, resource, sys, time

n = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, n + 64))
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(n)]
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def started() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Factory: a program of the test's (an opener, a descriptor holder); killed at teardown."""
    procs: list[subprocess.Popen[str]] = []

    def start(argv: list[str], ready: str | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        if ready is not None:
            assert proc.stdout is not None and proc.stdout.readline().strip() == ready
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=30)


@contextlib.contextmanager
def wrapped_host(folder: Path, body: str) -> Iterator[Sshd]:
    """An sshd whose every command runs through ``sh`` lines *body* (``$SSH_ORIGINAL_COMMAND``)."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\n{body}\n")
    wrapper.chmod(0o755)
    with local_sshd(folder / "sshd", f"ForceCommand {wrapper}\n") as server:
        yield server


def _refused(run_ssd: Any, server: Sshd, dev: Path, *more: str) -> str:
    """The one ERROR line of a run on *dev* through *server* (refused, nothing written)."""
    before = digest(dev)
    url = server.url(str(dev))
    run = run_ssd(
        f"--dut={url}", f"--ssd-confirm={dev}", f"--ssd-ssh-config={server.config}", *more
    )
    line = _one_error(run)
    assert digest(dev) == before
    assert not run.report_dir.exists() or not any(run.report_dir.glob("2*")), "no run folder"
    return line


def _where(server: Sshd) -> str:
    return f"ssh root@127.0.0.1 port {server.port}"


def _opener(started: Callable[..., subprocess.Popen[str]], dev: Path) -> int:
    """A program holding *dev* open for reading (no O_EXCL: only /proc/PID/fd shows it)."""
    proc = started(["sh", "-c", f'echo ready; exec sleep 600 < "{dev}"'], "ready")
    return proc.pid


def test_a_device_open_on_a_busy_host_is_refused_naming_the_opener(
    run_ssd: Any, random_loop: Path, started: Any, tmp_path: Path
) -> None:
    # before: `stat /proc/[0-9]*/fd/*` failed with E2BIG, the error was dropped, no opener
    # was seen and the device was written
    started([sys.executable, "-c", HOLD_FDS, str(BUSY_FDS)], "ready")
    pid = _opener(started, random_loop)
    body = 'ulimit -s 1024\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
    with wrapped_host(tmp_path / "busy", body) as server:
        line = _refused(run_ssd, server, random_loop)
    assert f"refusing to write to {random_loop} on {_where(server)}" in line
    assert f"it is open in pid {pid} (sleep 600)" in line, line


def test_a_host_whose_proc_cannot_be_read_is_refused(
    run_ssd: Any, random_loop: Path, started: Any, tmp_path: Path
) -> None:
    _opener(started, random_loop)
    # every command sees an empty /proc (its own mount namespace): no mount, swap or opener
    body = (
        "exec unshare --mount --propagation private /bin/sh -c"
        " 'mount -t tmpfs none /proc && exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"'"
    )
    with wrapped_host(tmp_path / "noproc", body) as server:
        line = _refused(run_ssd, server, random_loop)
    assert line.startswith(
        f"ERROR: {_where(server)}: the guard cannot read the device facts there ("
    ), line
    assert "/proc/swaps" in line and line.endswith("; refusing"), line


def _path_without(folder: Path, missing: str) -> Path:
    """A folder of links to every program on this machine's PATH but *missing*."""
    folder.mkdir(parents=True)
    for top in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for program in sorted(Path(top).iterdir()) if Path(top).is_dir() else []:
            link = folder / program.name
            if program.name != missing and not link.exists() and not link.is_symlink():
                link.symlink_to(program)
    return folder


@pytest.mark.parametrize(("missing", "package"), [("wipefs", "util-linux"), ("find", "findutils")])
def test_a_host_without_a_tool_the_guard_needs_is_refused_naming_it(
    run_ssd: Any, random_loop: Path, tmp_path: Path, missing: str, package: str
) -> None:
    # before: wipefs missing read "an exclusive open failed: sh: 1: wipefs: not found";
    # find missing dropped every /dev node from the facts and the run went on
    path = _path_without(tmp_path / "bin", missing)
    body = f'PATH={path}; export PATH\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
    with wrapped_host(tmp_path / "host", body) as server:
        line = _refused(run_ssd, server, random_loop)
    assert line == (
        f"ERROR: {missing} is not installed on {_where(server)}:"
        f" install {package} (apt-get install {package})"
    )


def test_a_slow_lock_says_it_timed_out(run_ssd: Any, random_loop: Path, tmp_path: Path) -> None:
    # before: "cannot lock ...: no output"
    pids = tmp_path / "slow.pids"
    body = (
        f'case $SSH_ORIGINAL_COMMAND in *flock*) echo $$ >> "{pids}"; exec sleep 600 ;; esac\n'
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
    )
    try:
        with wrapped_host(tmp_path / "slow", body) as server:
            line = _refused(run_ssd, server, random_loop)
    finally:
        for pid in pids.read_text().split() if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    assert line == (
        f"ERROR: timed out waiting for the lock on {random_loop} on {_where(server)}"
        f" after {ACQUIRE_TIMEOUT_S:g} s (nobody holds it there: the host is slow to answer)"
    ), line


def test_the_same_host_named_two_ways_is_one_device_named_twice(
    run_ssd: Any, server: Sshd, random_loop: Path
) -> None:
    # before: the second name's lock met the first's: "locked by pid ..., another session"
    first = server.url(str(random_loop))
    second = f"ssh://127.0.0.1:{server.port}{random_loop}"
    line = _refused(run_ssd, server, random_loop, f"--dut={second}")
    assert line == (
        f"ERROR: refusing --dut={second}: it is the same device as --dut={first}"
        f" ({random_loop} on {_where(server)}: the same host named twice);"
        " name each device once"
    ), line


def test_a_host_path_through_dev_dot_dot_to_a_file_is_not_a_block_device(
    run_ssd: Any, server: Sshd, tmp_path: Path
) -> None:
    # before: "cannot read /tmp/.../data.bin: it does not exist"
    file = tmp_path / "data.bin"
    file.write_bytes(os.urandom(1 << 20))
    before = digest(file)
    url = f"ssh://root@127.0.0.1:{server.port}/dev/..{file}"
    run = run_ssd(f"--dut={url}", f"--ssd-confirm={file}", f"--ssd-ssh-config={server.config}")
    line = _one_error(run)
    assert line == (
        f"ERROR: refusing --dut={url}: on {_where(server)} it is {file},"
        " a regular file, not a block device; on a test host, name a block device"
    ), line
    assert digest(file) == before


@pytest.mark.parametrize("name", ["with a blank", "long-" + "x" * 100])
def test_a_remote_run_works_whatever_tmpdir_is(
    run_ssd: Any,
    server: Sshd,
    loop_device: Any,
    tmp_path: Path,
    *,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    # before: ssh's own "unix_listener: path ... too long for Unix domain socket" or a
    # ControlPath cut at the blank, for every remote run
    tmpdir = tmp_path / name
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    dev = loop_device(256)
    url, config = server.url(str(dev)), f"--ssd-ssh-config={server.config}"
    run = run_ssd(f"--dut={url}", f"--ssd-confirm={dev}", config, "-k", "rnd-write")
    out = run.result.stdout.str() + run.result.stderr.str()
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=1, deselected=3)
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert list(tmpdir.iterdir()) == [], "nothing of the connection in TMPDIR, nothing left"


def test_a_user_who_may_not_read_every_process_is_refused() -> None:
    # the descriptor scan as the host's user `nobody` (this machine is the host): root's
    # processes are hidden from it, so a device they hold would not be seen
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    for user, code in (([], 0), (nobody, FAILED)):
        done = subprocess.run(
            [*user, "sh", "-c", RESCAN, "sh"],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == code, done.stderr
    assert done.stderr.splitlines()[-1].endswith("/fd': Permission denied"), done.stderr


def test_the_control_folder_of_a_killed_session_is_removed_by_the_next(
    run_ssd: Any,
    server: Sshd,
    loop_device: Any,
    tmp_path: Path,
    *,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session's control folder (its ssh sockets, in /tmp) is named for its pid: one killed
    with ``kill -9`` leaves it, and the next session with a test host removes it."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # the folders go to /tmp
    dev = loop_device(256)
    url, config = server.url(str(dev)), f"--ssd-ssh-config={server.config}"
    reports = tmp_path / "killed"
    argv = smoke_argv(
        reports, "--ssd-profile=quick", f"--dut={url}", f"--ssd-confirm={dev}", config
    )
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mine = f"ssd-{proc.pid}-*"
    try:
        _wait_for(lambda: bool(list(Path("/tmp").glob(mine))), "control folder", 120)
    finally:
        proc.kill()  # kill -9
        proc.wait(timeout=30)
        kill_everything_of(reports)
    left = list(Path("/tmp").glob(mine))
    assert [folder.is_dir() for folder in left] == [True], "kill -9 leaves it"
    run = run_ssd(f"--dut={url}", f"--ssd-confirm={dev}", config, "-k", "rnd-read")
    run.result.assert_outcomes(passed=1, deselected=3)
    assert not left[0].exists(), "the next session removed it"
