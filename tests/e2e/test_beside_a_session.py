"""pytest-ssd's own tests beside a real session on the same machine leave that session alone.

A lab runs ``./run tests`` on its controllers and hosts while qualification runs go on
there.  The session beside is a real pytest-ssd run measuring through a test host of this
machine: its fio server there is ``fio --server=sock:/tmp/ssd-fio.XXXXXX/fio.sock``, the
processes and folders the host cases of these tests once ended and counted by name
(``pkill -f "fio --server=sock:/tmp/ssd-fio"`` killed a real run's four servers).
Meanwhile the host case that loses its fio server runs, and its "nothing is left" checks:
the session beside keeps every process, measures on and ends as it would alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.conftest import REPO
from tests.e2e.test_remote_runs import SERVER_LOST, _suite_on_host
from tests.own import TAG_ENV, is_fio, kill_tagged, new_tag, tagged
from tests.sshd import Sshd, local_sshd

LoopFactory = Callable[..., Path]

#: the session beside: it measures through its fio server until told to stop, then once more
BESIDE = """
import os, time
from pathlib import Path
from pytest_ssd.fio.job import FioJob


def test_measures_until_told(ssd):
    done, deadline = Path(os.environ["BESIDE_DONE"]), time.monotonic() + 600
    while not done.exists() and time.monotonic() < deadline:
        ssd.run(FioJob("beside", "rnd", 4096, size=16 << 20, runtime_s=0.5), record=False)
    assert done.exists()


def test_measures_once_more(ssd):
    assert ssd.run(FioJob("after", "rnd", 4096, size=16 << 20, runtime_s=0.5)).directions
"""


def _start_beside(host: Sshd, dev: Path, folder: Path, tag: str) -> subprocess.Popen[str]:
    """The session beside on *dev* through *host*: a tag of its own, not this test's."""
    suite = folder / "suite"
    suite.mkdir(parents=True)
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_beside.py").write_text(BESIDE)
    argv = [sys.executable, "-m", "pytest", str(suite), f"--dut={host.url(str(dev))}"]
    argv += [f"--ssd-confirm={dev}", f"--ssd-ssh-config={host.config}", "--ssd-profile=quick"]
    argv += ["-p", "no:cacheprovider", f"--ssd-report-dir={folder / 'reports'}"]
    argv += [f"--rootdir={REPO}"]
    env = {**os.environ, TAG_ENV: tag, "BESIDE_DONE": str(folder / "done")}
    return subprocess.Popen(
        argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _fio_server(host: Sshd, beside: subprocess.Popen[str]) -> dict[int, str]:
    """The fio server processes of the session beside on its host, once they run."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and beside.poll() is None:
        found = {p: c for p, c in host.processes().items() if is_fio(c) and "--server=" in c}
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("the session beside started no fio server")


def _running(pid: int, cmdline: str) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip().decode() == (
            cmdline
        )
    except OSError:
        return False


def test_a_host_case_leaves_a_session_beside_alone(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path, test_tag: str
) -> None:
    dev, beside_dev = loop_device(64), loop_device(64)
    beside_tag, beside_folder = new_tag(), tmp_path / "beside"
    with local_sshd(tmp_path / "beside-host") as beside_host:
        beside = _start_beside(beside_host, beside_dev, beside_folder, beside_tag)
        try:
            servers = _fio_server(beside_host, beside)
            folder = next(iter(servers.values())).split("--server=sock:")[1].rsplit("/", 1)[0]
            # the case that once killed every fio server of the machine, and its checks
            run = _suite_on_host(run_ssd, server, dev, tmp_path, SERVER_LOST)
            run.result.assert_outcomes(passed=1, failed=1)
            assert server.settled() == [], "this test's host: nothing of its own left"
            assert not set(servers) & set(tagged(test_tag)), "the session beside is not ours"
            assert [p for p, c in servers.items() if _running(p, c)] == list(servers), (
                "the fio server of the session beside runs on"
            )
            assert Path(folder).is_dir(), "and its folder is still there"
            (beside_folder / "done").touch()
            out = beside.communicate(timeout=300)[0]
        finally:
            if beside.poll() is None:
                beside.kill()
                beside.communicate(timeout=60)
            kill_tagged(beside_tag)  # what the session beside left, if this test failed
    assert beside.returncode == 0, out
    assert "2 passed" in out and "FioError" not in out, out
    assert beside_host.settled() == [], "the session beside ended its own server there"
