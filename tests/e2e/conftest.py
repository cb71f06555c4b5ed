"""Helpers for end-to-end runs: the real plugin, real fio, real loop devices."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browsing import artifacts, chromium  # noqa: F401  (fixtures)
from tests.e2e.tuning import as_found, one_tuner  # noqa: F401  (fixtures, neither autouse)
from tests.own import kill_all
from tests.sshd import Sshd, local_sshd

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "suites" / "smoke"


@dataclass
class SsdRun:
    """One pytest-ssd run in a subprocess and what it left in its report folder."""

    result: pytest.RunResult
    report_dir: Path

    @property
    def run_dir(self) -> Path:
        return (self.report_dir / "latest").resolve()

    def results(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / "results.json").read_text())
        return data


def smoke_argv(reports: Path, *args: str, suite: Path = SMOKE) -> list[str]:
    """``python -m pytest suites/smoke ARGS`` (or *suite*) into *reports*, for a run driven
    by hand."""
    return [
        sys.executable,
        "-m",
        "pytest",
        str(suite),
        *args,
        "-p",
        "no:cacheprovider",
        f"--ssd-report-dir={reports}",
        f"--rootdir={REPO}",
    ]


@pytest.fixture
def run_ssd(pytester: pytest.Pytester, tmp_path: Path) -> Any:
    """``run_ssd(*args, suite=SMOKE)``: run pytest-ssd on a suite in a subprocess.

    The quick profile unless the test names one: real (loop) devices default to full.
    """

    def run(
        *args: str, suite: Path = SMOKE, timeout: float = 300, rootdir: Path | None = REPO
    ) -> SsdRun:
        report_dir = tmp_path / "reports"
        if not any(arg.startswith("--ssd-profile") for arg in args):
            args = (*args, "--ssd-profile=quick")
        if rootdir is not None:
            args = (f"--rootdir={rootdir}", *args)
        result = pytester.runpytest_subprocess(
            str(suite),
            f"--ssd-report-dir={report_dir}",
            "-p",
            "no:cacheprovider",
            *args,
            timeout=timeout,
        )
        return SsdRun(result, report_dir)

    return run


def shared_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, *args: str, suite: Path, timeout: float
) -> SsdRun:
    """One run of *suite* with *args* for every test of the session that reads it, made once
    for all xdist workers: the first to ask runs it (the others wait for it), each reads its
    outcome and report folder.  For the runs several modules check the same way."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / f"shared-{name}"
    folder.mkdir(exist_ok=True)
    outcome, reports = folder / "outcome.json", folder / "reports"
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not outcome.exists():
            outcome.write_text(
                json.dumps(_run_once(folder, smoke_argv(reports, *args, suite=suite), timeout))
            )
    ret, out, err, duration = json.loads(outcome.read_text())
    return SsdRun(pytest.RunResult(ret, out, err, duration), reports)


def _run_once(
    folder: Path, argv: list[str], timeout: float
) -> tuple[int, list[str], list[str], float]:
    start = time.monotonic()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=folder, check=False
        )
    except subprocess.TimeoutExpired as exc:
        said = f"{argv}: no end after {timeout:g} s"
        return -1, [str(exc.stdout or "")], [said], time.monotonic() - start
    return (
        done.returncode,
        done.stdout.splitlines(),
        done.stderr.splitlines(),
        time.monotonic() - start,
    )


#: suites/csd on a 1 GiB scratch device, quick profile, with its junit file (tests/e2e/test_csd.py
#: checks the run and its report, tests/e2e/test_junit.py the file: 200 s, run once)
CSD_QUICK_JUNIT = "junit.xml"


@pytest.fixture(scope="session")
def csd_quick(tmp_path_factory: pytest.TempPathFactory) -> SsdRun:
    """suites/csd's quick run on a 1 GiB scratch device, once for the session
    (:func:`shared_run`); its junit file is ``report_dir.parent / CSD_QUICK_JUNIT``."""
    junit = f"--junitxml={CSD_QUICK_JUNIT}"  # in the run's folder, its working folder
    args = ("--dut=scratch:1G", "--ssd-profile=quick", junit)
    return shared_run(
        tmp_path_factory, "csd-quick", *args, suite=REPO / "suites" / "csd", timeout=1200
    )


@pytest.fixture
def random_loop(loop_device: Any) -> Path:
    """A 64 MiB loop device full of random data (refusals must leave it byte-identical)."""
    dev: Path = loop_device(64)
    with dev.open("wb") as fh:
        for _ in range(64):
            fh.write(os.urandom(1 << 20))
    return dev


def digest(path: Path) -> str:
    """SHA-256 of a whole (small) device or file."""
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


def attached_loops() -> str:
    """``losetup -a``: a test looks for its own folder in it (its loop devices' backing files
    are there), never at the other lines (other sessions' devices)."""
    argv = ["losetup", "-a"]
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30).stdout


def detach_loops_under(folder: Path) -> None:
    """Detach the loop devices whose backing file is in *folder* (a test's own: a session it
    started and killed left them), whatever else is attached."""
    for line in attached_loops().splitlines():
        dev, _, rest = line.partition(":")
        if f"({folder}/" in rest:
            subprocess.run(["losetup", "-d", dev], check=False, capture_output=True, timeout=30)


def pids_naming(folder: Path) -> list[int]:
    """Processes whose command line names *folder* (a test's own: only its processes do)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if str(folder) in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                pids.append(int(proc.name))
    return pids


def kill_everything_of(folder: Path, timeout: float = 30) -> None:
    """SIGKILL every process whose command line names *folder*, and wait until none is left.

    fio runs in a session of its own (so pytest-ssd can stop its whole group) and
    outlives a killed pytest until its job ends.
    """
    kill_all(lambda: pids_naming(folder), timeout)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A real sshd on 127.0.0.1 for the module's tests: the test host (tests/sshd.py)."""
    with local_sshd(tmp_path_factory.mktemp("sshd")) as started:
        yield started


CSSD_READ = """
import pytest
from pytest_ssd.fio.job import FioJob


@pytest.mark.dut_state("cssd")
def test_read_in_cssd(ssd):
    r = ssd.region("rnd")
    job = FioJob("rnd-read", "rnd", 4096, iodepth=4, offset=r.offset, size=r.size, runtime_s=0.3)
    assert ssd.run(job).directions["read"].io_bytes > 0
"""


def cssd_suite(folder: Path) -> Path:
    """A suite of one test that needs the device in ``cssd`` (a purge and preconditioning)."""
    suite = folder / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_cssd.py").write_text(CSSD_READ)
    return suite
