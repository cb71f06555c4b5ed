"""Run fio jobs on a target and return typed results.

fio's own failure modes are turned into :class:`FioError` with fio's message:
missing binary, non-zero exit, a job error, or a job that did no I/O (which
fio reports with exit 0, e.g. on a mounted device).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.errors import FioError, ParseError, ToolError
from pytest_ssd.fio.job import FIO_INSTALL_HINT, FioJob, fio_path, render
from pytest_ssd.fio.results import FioOutput, JobResult, parse_output
from pytest_ssd.fio.runners import FioRunner
from pytest_ssd.fio.status import StatusCallback, StatusSink
from pytest_ssd.fio.watch import timeout_for
from pytest_ssd.machine.machine import Machine
from pytest_ssd.proc import Completed, run, which
from pytest_ssd.proc.runner import Stalled

#: seconds between fio's status reports when progress is followed
STATUS_INTERVAL_S = 1
#: ``fio --client`` dies of SIGPIPE when the server drops it (refused jobs)
SIGPIPE_EXITS = (-signal.SIGPIPE, 128 + signal.SIGPIPE)


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


def _timeout(jobs: Sequence[FioJob], target: str, runner: FioRunner) -> float:
    """The run's timeout by its size (:func:`~pytest_ssd.fio.watch.timeout_for`)."""
    whole = any(job.runtime_s is None and not (job.io_bytes or job.size) for job in jobs)
    return timeout_for(jobs, runner.capacity(target) if whole else None)


def _check(jobs: Sequence[FioJob], output: FioOutput, target: str, stderr: str) -> None:
    for job in jobs:
        try:
            result = output.job(job.name)
        except ParseError:
            said = [
                line.partition("fio: ")[2]
                for line in (output.notes + "\n" + stderr).splitlines()
                if "fio: " in line
            ]
            reason = said[0] if said else "fio gave no reason"
            raise FioError(f"fio job {job.name} did not run on {target}: {reason}") from None
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


def block_family(machine: Machine, name: str) -> set[str]:
    """Kernel names of block device *name* on *machine* and every device it is built on."""
    names: set[str] = set()
    todo = [name]
    while todo:
        found = todo.pop()
        if found not in names:
            names.add(found)
            todo += [
                p.rpartition("/")[2] for p in machine.glob(f"/sys/class/block/{found}/slaves/*")
            ]
    return names


def check_target(output: FioOutput, target: str, machine: Machine) -> None:
    """Raise :class:`FioError` unless fio worked on *target* (on *machine*) and nothing else.

    fio names the file of each job in its options and the disks it saw busy in
    ``disk_util`` (the disks of the machine it ran on): a job on another file, or a disk
    that is not the target (or what it is built on), means fio was pointed somewhere else.
    """
    expected = fio_path(target)
    for job in output.jobs:
        given = job.options.get("filename")
        if given != expected:
            raise FioError(
                f"fio job {job.name} ran on {given!r}, not on the guarded target {target}:"
                " treat the device's contents as unknown"
            )
    disks = {str(d.get("name")) for d in output.disk_util}
    name = machine.block_name(target) if disks else None
    if name is None or disks <= {name}:  # a file, or the device alone: nothing to look up
        return
    strangers = sorted(disks - block_family(machine, name))
    if strangers:
        raise FioError(
            f"fio reported I/O on {', '.join(strangers)}, not on the guarded"
            f" target {target}: treat those devices' contents as unknown"
        )


#: what ``fio --client`` prints (on stdout, among its JSON) when it loses its server, in words
_CLIENT_LOST = (
    (
        re.compile(r"^client: host=(\S+) disconnected$"),
        "the fio server ({}) disconnected while the jobs ran (the server process ended, or the"
        " host or its connection went away): treat the device's contents as unknown",
    ),
    (
        re.compile(r"^fio: connect: (.+)$"),
        "fio could not reach its server ({}): it is gone, or the host is unreachable",
    ),
)


def exited(completed: Completed, where: str) -> str:
    """Why fio failed on *where*, in words: a lost server said so, else fio's last word."""
    said = completed.last_error_line()
    for line in (*completed.stderr.splitlines(), *completed.stdout.splitlines()):
        for pattern, words in _CLIENT_LOST:
            match = pattern.match(line.strip())
            if match:
                said = words.format(match.group(1))
                break
    silent = not (completed.stdout.strip() or completed.stderr.strip())
    if silent and completed.returncode in SIGPIPE_EXITS:
        said = "the fio server closed the connection (it is gone, or it refused the jobs)"
    return f"fio exited {completed.returncode} on {where}: {said}"


def run_jobs(
    jobs: Sequence[FioJob],
    target: str | Path,
    *,
    artifacts: Path,
    readonly: bool = False,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    runner: FioRunner,
) -> FioRun:
    """Run *jobs* in one fio process on *target*, keeping every file in *artifacts*.

    The caller is responsible for the safety guard: this function only runs fio.
    With ``readonly`` fio itself refuses to write (``--readonly``).  With
    *on_status*, fio reports once a second (``--status-interval=1``) and each
    report is handed to *on_status* as it comes (progress of long steps).  *runner* is
    where fio runs: here, or a test host's fio server (``fio --client``), *target* its path there.
    """
    fio = which("fio", FIO_INSTALL_HINT)
    artifacts.mkdir(parents=True, exist_ok=True)
    jobfile = artifacts / "fio.job"
    jobfile.write_text(render(jobs, str(target), log_prefix=str(artifacts / "log")))
    # fio --client passes on only the options after it: --readonly must go to the host
    argv = [fio, *runner.client_args(artifacts)]
    if readonly:
        argv.append("--readonly")
    sink = None
    if on_status is not None:
        argv.append(f"--status-interval={STATUS_INTERVAL_S}")
        sink = StatusSink(on_status)
    argv += ["--output-format=json+", str(jobfile)]
    where = runner.where(str(target))
    started = time.time()
    try:
        completed = run(
            argv,
            timeout=timeout or _timeout(jobs, str(target), runner),
            artifacts=artifacts,
            name="fio",
            sink=sink,
            cwd=artifacts,
            watch=runner.watch(jobs, str(target)),
        )
    except Stalled as exc:
        runner.stalled()
        raise FioError(str(exc)) from None
    ended = time.time()
    runner.finished(artifacts, str(target))
    try:
        output = parse_output(completed.stdout)
    except ParseError as exc:
        if completed.returncode:
            raise FioError(exited(completed, where)) from None
        raise FioError(f"fio on {where}: {exc}") from None
    if completed.returncode:
        raise FioError(exited(completed, where))
    _check(jobs, output, str(target), completed.stderr)
    check_target(output, str(target), runner.machine)
    return FioRun(tuple(jobs), output, completed, artifacts, started, ended)
