"""Run fio jobs on a target and return typed results.

fio's own failure modes are turned into :class:`FioError` with fio's message:
missing binary, non-zero exit, a job error, or a job that did no I/O (which
fio reports with exit 0, e.g. on a mounted device).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.errors import FioError, ParseError, ToolError
from pytest_ssd.fio.job import FioJob, render
from pytest_ssd.fio.results import FioOutput, JobResult, parse_output
from pytest_ssd.fio.status import StatusCallback, StatusSink
from pytest_ssd.proc import Completed, run, which

FIO_INSTALL_HINT = "install it with 'apt-get install fio' (Debian/Ubuntu) or 'dnf install fio'"
#: seconds allowed beyond the planned runtime before fio is considered hung
TIMEOUT_MARGIN_S = 120.0
#: seconds between fio's status reports when progress is followed
STATUS_INTERVAL_S = 1
#: a job that runs by amount, not time, gets this long at most unless told otherwise
DEFAULT_AMOUNT_TIMEOUT_S = 6 * 3600.0


@dataclass(frozen=True)
class FioRun:
    """One fio process: the jobs asked for, what fio measured, and where its files are."""

    jobs: tuple[FioJob, ...]
    output: FioOutput
    completed: Completed
    artifacts: Path
    started: float
    ended: float

    def result(self, job: FioJob | str) -> JobResult:
        return self.output.job(job if isinstance(job, str) else job.name)


def fio_version() -> str | None:
    """fio's version string ('fio-3.33'), or None when fio is not installed."""
    try:
        path = which("fio", FIO_INSTALL_HINT)
    except ToolError:
        return None
    done = run([path, "--version"], timeout=30)
    return done.stdout.strip() or None


def _timeout(jobs: Sequence[FioJob]) -> float:
    if any(job.runtime_s is None for job in jobs):
        return DEFAULT_AMOUNT_TIMEOUT_S
    return sum(job.planned_seconds for job in jobs) + TIMEOUT_MARGIN_S


def _check(jobs: Sequence[FioJob], output: FioOutput, target: str, stderr: str) -> None:
    for job in jobs:
        result = output.job(job.name)
        if result.error:
            said = [line for line in stderr.splitlines() if line.startswith("fio")]
            detail = said[-1] if said else os.strerror(result.error)
            raise FioError(
                f"fio job {job.name} on {target} failed (error {result.error}): {detail}"
            )
        if result.io_bytes <= 0:
            raise FioError(
                f"fio job {job.name} did no I/O on {target} (fio exits 0 like this on a"
                " mounted or read-only device)"
            )


def run_jobs(
    jobs: Sequence[FioJob],
    target: str | Path,
    *,
    artifacts: Path,
    readonly: bool = False,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
) -> FioRun:
    """Run *jobs* in one fio process on *target*, keeping every file in *artifacts*.

    The caller is responsible for the safety guard: this function only runs fio.
    With ``readonly`` fio itself refuses to write (``--readonly``).  With
    *on_status*, fio reports once a second (``--status-interval=1``) and each
    report is handed to *on_status* as it comes (progress of long steps).
    """
    fio = which("fio", FIO_INSTALL_HINT)
    artifacts.mkdir(parents=True, exist_ok=True)
    jobfile = artifacts / "fio.job"
    jobfile.write_text(render(jobs, str(target), log_prefix=str(artifacts / "log")))
    argv = [fio, "--output-format=json+", str(jobfile)]
    if readonly:
        argv.insert(1, "--readonly")
    sink = None
    if on_status is not None:
        argv.insert(1, f"--status-interval={STATUS_INTERVAL_S}")
        sink = StatusSink(on_status)
    started = time.time()
    completed = run(
        argv, timeout=timeout or _timeout(jobs), artifacts=artifacts, name="fio", sink=sink
    )
    ended = time.time()
    try:
        output = parse_output(completed.stdout)
    except ParseError as exc:
        if completed.returncode:
            raise FioError(
                f"fio exited {completed.returncode} on {target}: {completed.last_error_line()}"
            ) from None
        raise FioError(f"fio on {target}: {exc}") from None
    if completed.returncode:
        raise FioError(
            f"fio exited {completed.returncode} on {target}: {completed.last_error_line()}"
        )
    _check(jobs, output, str(target), completed.stderr)
    return FioRun(tuple(jobs), output, completed, artifacts, started, ended)
