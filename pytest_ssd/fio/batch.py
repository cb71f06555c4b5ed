"""Many fio jobs in one fio process, released one at a time: a sweep's points, each a test.

fio 3.33 spends about 0.3 s per stonewalled job (its scheduler sleeps 100 ms at a
time) and about 0.4 s per process, more than a short benchmark point lasts.  A
batch starts every job of a run of point tests in one fio process, not
stonewalled, each held at a gate before its clock starts:

* ``exec_prerun=read x < gate-N && test x$x = xgo`` runs in the job's thread
  before its epoch is set (backend.c), so waiting is not measured; writing
  ``go`` releases the job, ``skip`` makes the prerun fail and fio ends the job
  without I/O (``goto err`` with no error set).
* ``exec_postrun=: > done-N`` (a FIFO the release holds open) marks the job's
  end, after fio wrote its per-I/O latency logs (``td_writeout_logs`` runs first).
* A released job's figures come from those logs (:mod:`.iolog`): fio prints its
  own only when the process ends, and a status report (SIGUSR1,
  ``--status-interval``) deadlocks with jobs waiting in their prerun.
* :meth:`Batch.close` waits for fio, parses its JSON and says where the figures
  handed out differ from fio's (:meth:`BatchRun.differences`).

A job that never reaches its gate (its set-up failed, fio died) makes
:meth:`Batch.release` fail within ``gate_timeout`` with fio's own message; the
caller aborts the batch (every process of it is killed).  Jobs must be
amount-based or short: every completion is logged.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.errors import FioError, ParseError
from pytest_ssd.fio.engine import FIO_INSTALL_HINT, check_target
from pytest_ssd.fio.iolog import job_result
from pytest_ssd.fio.job import FioJob, fio_path, render
from pytest_ssd.fio.results import DirectionResult, FioOutput, JobResult, parse_output
from pytest_ssd.proc import Background, Completed, spawn, which

#: how long a job may take to reach its gate (fio start-up, opening the device)
GATE_TIMEOUT_S = 60.0
#: how often a release looks for its job at the gate (it is there unless fio just started)
POLL_S = 0.002
#: how often a release waiting for its job's end checks that fio still runs
LIVENESS_S = 0.5
#: seconds beyond a job's planned time before it counts as hung (amount-based: generous)
RUN_MARGIN_S = 120.0
AMOUNT_TIMEOUT_S = 6 * 3600.0
#: fio's run time is whole milliseconds, rounded up; the logs' times are truncated
RUNTIME_RESOLUTION_MS = 1


@dataclass(frozen=True)
class BatchRun:
    """A closed batch: what fio printed, and the figures the releases handed out."""

    output: FioOutput
    completed: Completed
    released: dict[str, JobResult]
    skipped: tuple[str, ...]

    def differences(self) -> list[str]:
        """Where a released job's figures differ from fio's final JSON (empty: none).

        Bytes, I/Os and the latency histogram must be fio's; the run time may differ
        by fio's own resolution, 1 ms (fio rounds the elapsed microseconds up; the
        logs carry milliseconds).
        """
        found = []
        for name, mine in self.released.items():
            fio = self.output.job(name)
            for direction, done in fio.directions.items():
                if not done.io_bytes:
                    continue
                ours = mine.directions.get(direction)
                if ours is None:
                    found.append(f"{name} {direction}: not in the logs")
                    continue
                for what in ("io_bytes", "total_ios"):
                    if getattr(ours, what) != getattr(done, what):
                        found.append(
                            f"{name} {direction} {what}: {getattr(ours, what)} vs fio's "
                            f"{getattr(done, what)}"
                        )
                if abs(ours.runtime_ms - done.runtime_ms) > RUNTIME_RESOLUTION_MS:
                    found.append(
                        f"{name} {direction} runtime: {ours.runtime_ms} ms vs fio's "
                        f"{done.runtime_ms} ms"
                    )
                if ours.clat and done.clat and ours.clat.bins != done.clat.bins:
                    found.append(f"{name} {direction}: latency histogram differs")
                found += _mean_differences(f"{name} {direction}", ours, done)
        return found


#: fio prints means with six decimals, computed as a running mean: agreement to 1 ppm
MEAN_TOLERANCE = 1e-6


def _mean_differences(where: str, ours: DirectionResult, fio: DirectionResult) -> list[str]:
    means = {
        "clat mean": (
            ours.clat.mean_ns if ours.clat else None,
            fio.clat.mean_ns if fio.clat else None,
        ),
        "lat mean": (ours.lat_mean_ns, fio.lat_mean_ns),
        "slat mean": (ours.slat_mean_ns, fio.slat_mean_ns),
    }
    return [
        f"{where} {what}: {mine:,.1f} ns vs fio's {theirs:,.1f} ns"
        for what, (mine, theirs) in means.items()
        if mine is not None and theirs and abs(mine - theirs) > MEAN_TOLERANCE * theirs
    ]


@dataclass
class Batch:
    """Jobs on *target* in one fio process, each run when :meth:`release`\\ d."""

    jobs: Sequence[FioJob]
    target: str | Path
    artifacts: Path
    readonly: bool = False
    gate_timeout: float = GATE_TIMEOUT_S
    _fio: Background | None = None
    _index: dict[str, int] = field(default_factory=dict)
    _released: dict[str, JobResult] = field(default_factory=dict)
    _skipped: list[str] = field(default_factory=list)
    _ran: list[str] = field(default_factory=list)
    #: log every I/O, so that :meth:`release` can hand out a job's figures at once
    logs: bool = False

    def __post_init__(self) -> None:
        self._index = {job.name: n for n, job in enumerate(self.jobs, 1)}

    # --- the process ----------------------------------------------------------------------

    def start(self) -> None:
        """Write the job file, make the gates and start fio (it returns at once)."""
        fio = which("fio", FIO_INSTALL_HINT)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        for n in self._index.values():
            for name in (f"gate-{n}", f"done-{n}"):
                (self.artifacts / name).unlink(missing_ok=True)
                os.mkfifo(self.artifacts / name, 0o600)
        (self.artifacts / "fio.job").write_text(self._jobfile())
        argv = [fio, "--output-format=json+", "fio.job"]
        if self.readonly:
            argv.insert(1, "--readonly")
        self._fio = spawn(argv, artifacts=self.artifacts, name="fio")

    def _jobfile(self) -> str:
        """The jobs, none stonewalled, each gated and logging every I/O."""
        text = render(list(self.jobs), str(self.target)).replace("\nstonewall\n", "\n")
        out: list[str] = []
        for line in text.splitlines():
            out.append(line)
            name = line[1:-1] if line.startswith("[") and line.endswith("]") else None
            if name in self._index:
                n = self._index[name]
                out += [
                    f"exec_prerun=read x < gate-{n} && test x$x = xgo",
                    f"exec_postrun=: > done-{n}",
                ]
                if self.logs:
                    out += [f"write_lat_log=io-{n}", "log_avg_msec=0"]
        return "\n".join(out) + "\n"

    @property
    def running(self) -> bool:
        """fio runs (a failed release kills it: the points after it run fio of their own)."""
        return self._fio is not None and self._fio.alive()

    def _dead(self, job: FioJob, what: str) -> FioError:
        fio = self._fio
        said = fio.kill().last_error_line() if fio is not None else "fio was not started"
        return FioError(f"fio job {job.name} on {self.target} {what}: {said}")

    # --- releasing jobs -------------------------------------------------------------------

    def _tell(self, job: FioJob, word: bytes) -> bool:
        """Write *word* to *job*'s gate if the job waits there (False: it is not there yet)."""
        try:
            fd = os.open(
                self.artifacts / f"gate-{self._index[job.name]}", os.O_WRONLY | os.O_NONBLOCK
            )
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: nobody reads yet (the job is not there)
                raise
            return False
        try:
            os.write(fd, word)
        finally:
            os.close(fd)
        return True

    def _open_gate(self, job: FioJob, word: bytes) -> None:
        deadline = time.monotonic() + self.gate_timeout
        while not self._tell(job, word):
            if not self.running:
                raise self._dead(job, "never reached its gate: fio ended")
            if time.monotonic() > deadline:
                raise self._dead(job, f"did not reach its gate in {self.gate_timeout:g} s")
            time.sleep(POLL_S)

    def release(self, job: FioJob, *, pause_s: float = 0.0) -> JobResult:
        """Run *job* now (after *pause_s* of idle, not measured) and return its figures.

        The figures are read from the job's per-I/O logs (``logs=True``); without
        them, :meth:`run` the jobs and read fio's own figures from :meth:`close`.
        """
        n = self.run(job, pause_s=pause_s)
        options = dict(job.options())
        options["filename"] = fio_path(str(self.target))
        try:
            result = job_result(job.name, self.artifacts / f"io-{n}", options)
        except ParseError as exc:
            raise self._dead(job, f"left no figures ({exc})") from None
        self._released[job.name] = result
        return result

    def run(self, job: FioJob, *, pause_s: float = 0.0) -> int:
        """Run *job* now (after *pause_s* of idle, not measured) and wait for its end."""
        if job.name not in self._index or job.name in self._ran:
            raise FioError(f"fio job {job.name} is not waiting in this batch")
        if pause_s > 0:
            time.sleep(pause_s)
        n = self._index[job.name]
        # the end is a FIFO too: the wait blocks in select() instead of polling a file
        done = os.open(self.artifacts / f"done-{n}", os.O_RDONLY | os.O_NONBLOCK)
        try:
            self._open_gate(job, b"go\n")
            limit = job.planned_seconds + RUN_MARGIN_S if job.runtime_s else AMOUNT_TIMEOUT_S
            deadline = time.monotonic() + limit
            while not select.select([done], [], [], LIVENESS_S)[0]:
                if not self.running:
                    raise self._dead(job, "did not finish: fio ended")
                if time.monotonic() > deadline:
                    raise self._dead(job, f"did not finish in {limit:g} s")
        finally:
            os.close(done)
        self._ran.append(job.name)
        return n

    def skip(self, job: FioJob) -> None:
        """Let *job* end without I/O (its point was skipped or deselected)."""
        if job.name in self._ran or job.name in self._skipped:
            return
        self._open_gate(job, b"skip\n")
        self._skipped.append(job.name)

    @property
    def waiting(self) -> list[FioJob]:
        """Jobs neither released nor skipped yet."""
        gone = {*self._ran, *self._skipped}
        return [job for job in self.jobs if job.name not in gone]

    def close(self) -> BatchRun:
        """Skip what still waits, wait for fio and check its output against the releases."""
        for job in self.waiting:
            self.skip(job)
        fio = self._fio
        if fio is None:
            raise FioError("the fio batch was never started")
        completed = fio.wait(RUN_MARGIN_S)
        try:
            output = parse_output(completed.stdout)
        except ParseError as exc:
            raise FioError(
                f"fio exited {completed.returncode} on {self.target}: "
                f"{completed.last_error_line()} ({exc})"
            ) from None
        if completed.returncode:
            raise FioError(
                f"fio exited {completed.returncode} on {self.target}: {completed.last_error_line()}"
            )
        check_target(output, str(self.target))
        return BatchRun(output, completed, dict(self._released), tuple(self._skipped))

    def abort(self) -> None:
        """Kill fio and every job of it (nothing of the batch runs afterwards)."""
        for job in self.waiting:  # a job waiting in its prerun leaves without I/O
            with contextlib.suppress(OSError):
                self._tell(job, b"skip\n")
        if self._fio is not None:
            self._fio.kill()

    def __enter__(self) -> Batch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running:
            self.abort()
