"""Many fio jobs held at gates, released one at a time: a sweep's points, each a test.

fio 3.33 spends about 0.3 s per stonewalled job (its scheduler sleeps 100 ms at a
time) and about 0.4 s per process, more than a short benchmark point lasts.  A
batch runs a run of point tests' jobs, each point a fio process of its own, each
job held at a gate before its clock starts:

* ``exec_prerun=read x < gate-N && test x$x = xgo`` runs in the job's thread
  before its epoch is set (backend.c), so waiting is not measured; writing
  ``go`` releases the job, ``skip`` makes the prerun fail and fio ends the job
  without I/O (``goto err`` with no error set).
* ``exec_postrun=: 1<> done-N`` (a FIFO the release holds open) marks the job's end;
  opened read-write, it does not wait for a reader that died.

A fio process takes about 0.2 s from its start to its jobs' gates on the
development VM: 0.065 s of a CPU busy-spinning (fio calibrates its clock before
it parses its jobs, whatever the clocksource), then 0.1 s of its scheduler
sleeping before the forked jobs go on (``run_threads()``), more than a point's
own overhead.  So the fio processes of the next points start ahead, :data:`AHEAD`
at a time, as a point's I/O ends, under ``SCHED_IDLE``: their start-up and their
waiting only use a CPU the point being measured leaves idle.  A release gives
its own fio (every thread and job of it) the normal policy back first.  Where
this process may not do that (no CAP_SYS_NICE) the processes start at normal
priority and a release waits until every other started fio is past its spin.

fio prints a job's figures only when its process ends, and a status report
(SIGUSR1, ``--status-interval``) deadlocks with jobs waiting in their prerun.  So
a point's figures are its fio process's own JSON, read when that process exits
after the point's last job (:meth:`Batch.measure`; about 0.05 s: the libaio
context's teardown and a 10 ms poll of fio's main loop).  The batch logs nothing
per I/O: a per-I/O log costs fio about 1 us an I/O, which read 3 % off a 4 KiB QD1-4
point on the development VM; a log a job asks for itself (``write_lat_log`` in its
options) comes back with its fio's output into its point's folder.  Every fio
process of a batch uses the same clock, :data:`CLOCK`.

The gates and the fio processes are the batch agent's where fio runs, this
machine or a test host alike (:class:`~pytest_ssd.fio.agent.Gates`): the device's
fio runner gives a batch its gates, connected
(:meth:`~pytest_ssd.fio.runners.FioRunner.batch_gates`).

A job that never reaches its gate (its set-up failed, fio died) makes its
release fail within ``gate_timeout`` with fio's own message; the caller aborts
the batch (every process of it is killed, none starts afterwards).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.errors import FioError, ParseError, SafetyError
from pytest_ssd.fio.agent import AgentFio, Gates
from pytest_ssd.fio.engine import check_target, exited
from pytest_ssd.fio.job import FioJob, render
from pytest_ssd.fio.results import FioOutput, JobResult, parse_output
from pytest_ssd.fio.watch import StallWatch, timeout_for
from pytest_ssd.proc import Completed

#: how long a job may take to reach its gate (fio start-up, opening the device)
GATE_TIMEOUT_S = 60.0
#: fio processes started ahead of their turn (see the module's notes): 0.2 s of start-up
#: spread over the points before
AHEAD = 3
#: how often a release looks for its job at the gate (it is there unless fio just started)
POLL_S = 0.002
#: how often a release waiting for its job's end checks that fio still runs
LIVENESS_S = 0.5
#: how often gates are held while a batch started early waits for its first release
HOLD_S = 0.05
#: seconds a point's fio may take to exit after its last job
RUN_MARGIN_S = 120.0
#: the batches' clock: fio's own pick is not stable on every machine (its TSC test failed
#: in 1 of 5 runs on the development VM), and skipping the test saves 0.05 s of CPU a process
CLOCK = "clock_gettime"


@dataclass(frozen=True)
class BatchRun:
    """A closed batch: what its fio processes printed, and the jobs skipped without I/O."""

    output: FioOutput
    completed: Completed
    skipped: tuple[str, ...]


@dataclass
class _Process:
    """One fio process of a batch: its jobs, its folder and, once it ended, its output."""

    jobs: tuple[FioJob, ...]
    folder: Path
    #: the folder's name in the batch's folder ("" for a batch of one process)
    relative: str = ""
    fio: AgentFio | None = None
    output: FioOutput | None = None
    completed: Completed | None = None
    #: every job of it waits at its gate under the normal CPU policy
    armed: bool = False


@dataclass
class Batch:
    """Jobs on *target* held at their gates: :meth:`measure` runs a point's and hands out figures.

    *points* gives the number of consecutive jobs of each point, a fio process
    each; empty: all jobs in one process.
    """

    jobs: Sequence[FioJob]
    target: str | Path
    artifacts: Path
    readonly: bool = False
    gate_timeout: float = GATE_TIMEOUT_S
    points: Sequence[int] = ()
    #: the caller's work done while a point's fio exits (the wait for its output)
    while_exiting: Callable[[], None] | None = None
    #: its agent's gates where fio runs (the device's fio runner gives them, connected)
    gates: Gates = field(kw_only=True)
    _processes: list[_Process] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict)
    _owner: dict[str, _Process] = field(default_factory=dict)
    _gates: Gates | None = None
    _skipped: list[str] = field(default_factory=list)
    _ran: list[str] = field(default_factory=list)
    _aborted: bool = False
    _started: bool = False
    _fio: str = "fio"
    #: processes start under SCHED_IDLE (this process may give them the normal policy back)
    _idle: bool = False
    #: holds gates until the first release, for a batch started early (:meth:`hold_meanwhile`)
    _holder: tuple[threading.Event, threading.Thread] | None = None

    def __post_init__(self) -> None:
        self._index = {job.name: n for n, job in enumerate(self.jobs, 1)}
        sizes = list(self.points) or [len(self.jobs)]
        if sum(sizes) != len(self.jobs) or min(sizes) < 1:
            raise FioError(f"a fio batch of {len(self.jobs)} jobs cannot be split {sizes}")
        first = 0
        for size in sizes:
            jobs = tuple(self.jobs[first : first + size])
            relative = "" if len(sizes) == 1 else jobs[0].name
            self._processes.append(_Process(jobs, self.artifacts / relative, relative))
            self._owner |= {job.name: self._processes[-1] for job in jobs}
            first += size

    # --- the processes --------------------------------------------------------------------

    def start(self) -> None:
        """Write the job files, make the gates and start the first point's fio (at once)."""
        gates = self.gates
        self._fio = gates.fio()
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self._gates = gates
        names = [f"{kind}-{n}" for n in self._index.values() for kind in ("gate", "done")]
        gates.open(names)
        for process in self._processes:
            process.folder.mkdir(parents=True, exist_ok=True)
            text = self._jobfile(process)
            (process.folder / "fio.job").write_text(text)
            gates.put(f"{process.relative or '.'}/fio.job", text)
        self._started = True
        # its agent says whether it may (root, a known syscall number)
        self._idle = gates.idle
        self._start_next()

    @property
    def _open(self) -> Gates:
        if self._gates is None:
            raise FioError("the fio batch was never started")
        return self._gates

    @property
    def aborted(self) -> bool:
        """:meth:`abort` ended it: every fio of it was killed."""
        return self._aborted

    @property
    def checks_device(self) -> bool:
        """Each release checks the pinned device itself (its agent, at the gate)."""
        return self.gates.checks_device

    def _start_next(self) -> None:
        """Start the fio processes of the next :data:`AHEAD` points still waiting."""
        if self._aborted:
            return
        for process in self._upcoming()[:AHEAD]:
            self._spawn(process)

    def _upcoming(self) -> list[_Process]:
        """The processes with a job still waiting, in their points' order."""
        waiting = {job.name for job in self.waiting}
        return [p for p in self._processes if any(j.name in waiting for j in p.jobs)]

    def _spawn(self, process: _Process) -> None:
        if process.fio is not None:
            return
        jobfile = self.gates.jobfile(process.relative)
        argv = [self._fio, "--output-format=json+", f"--clocksource={CLOCK}", jobfile]
        if self.readonly:
            argv.insert(1, "--readonly")
        process.fio = self.gates.spawn(process.relative, argv, process.folder, idle=self._idle)

    def _jobfile(self, process: _Process) -> str:
        """*process*'s jobs, none stonewalled, each gated."""
        up = self.gates.prefix(process.relative)
        text = render(list(process.jobs), str(self.target)).replace("\nstonewall\n", "\n")
        out: list[str] = []
        for line in text.splitlines():
            out.append(line)
            name = line[1:-1] if line.startswith("[") and line.endswith("]") else None
            if name in self._index:
                n = self._index[name]
                out += [
                    f"exec_prerun=read x < {up}gate-{n} && test x$x = xgo",
                    f"exec_postrun=: 1<> {up}done-{n}",
                ]
        return "\n".join(out) + "\n"

    def _process(self, job: FioJob) -> _Process:
        found = self._owner.get(job.name)
        if found is None:
            raise FioError(f"fio job {job.name} is not in this batch")
        return found

    def folder(self, job: FioJob) -> Path:
        """Where *job*'s fio process keeps its job file and output."""
        return self._process(job).folder

    @property
    def running(self) -> bool:
        """The batch started, and every started fio with a job still waiting runs.

        A process whose jobs all ran ends by itself; its output is read when its point
        is measured or the batch closes.  A failed release kills them all.
        """
        if not self._started or self._aborted:
            return False
        started = [p.fio for p in self._upcoming() if p.fio is not None]
        if any(fio.done is not None for fio in started):
            return False
        return all(self._open.alive([fio.key for fio in started]))  # one request for all

    @staticmethod
    def _alive(process: _Process) -> bool:
        return process.fio is not None and process.fio.alive()

    def _dead(self, job: FioJob, what: str) -> FioError:
        fio = self._process(job).fio
        said = fio.kill().last_error_line() if fio is not None else "fio was not started"
        self.abort()
        return FioError(f"fio job {job.name} on {self._where} {what}: {said}")

    @property
    def _where(self) -> str:
        return self.gates.where(str(self.target))

    # --- the gates ------------------------------------------------------------------------

    def _arm(self, job: FioJob) -> None:
        """Hold *job*'s fio's gates (started if it was not), at the normal CPU policy.

        Every job of *job*'s fio waits at its gate (held from then on).  Without
        SCHED_IDLE, every other started fio is past its start-up's CPU-bound part
        too, or ended (its own release fails).
        """
        self._stop_holding()  # from here on this thread holds the gates
        own = self._process(job)
        self._spawn(own)
        self._normal(own)  # what is left of its start-up at full speed: nothing measures now
        deadline = time.monotonic() + self.gate_timeout
        self._hold_ready()  # those there already, in one request
        for waiting in self.waiting:
            process = self._process(waiting)
            if process.fio is None:
                continue
            while not self._open.hold(self._index[waiting.name]):
                alive = self._alive(process)
                if process is not own and (self._idle or not alive or process.fio.children()):
                    break  # idle until its turn (or failed: its release says so)
                if not alive:
                    raise self._dead(waiting, "never reached its gate: fio ended")
                if time.monotonic() > deadline:
                    raise self._dead(waiting, f"did not reach its gate in {self.gate_timeout:g} s")
                time.sleep(POLL_S)
        self._normal(own)  # the jobs and their gates' shells it started since
        own.armed = True

    def _hold_ready(self) -> None:
        """Hold every gate a started fio's job already waits at.

        A held gate reads EOF when this process dies (``kill -9``): its job ends
        without I/O and its fio exits.  A job waiting to open a gate nobody holds
        would wait forever, its fio holding the device open.
        """
        started = [job for job in self.waiting if self._process(job).fio is not None]
        self._open.hold_each([self._index[job.name] for job in started])

    def hold_meanwhile(self) -> None:
        """Hold each gate as its job reaches it, in a thread, until the first release.

        For a batch started before its first point's test runs (during the state
        transition's last steps, or the rest before a sweep): a ``kill -9`` of
        pytest meanwhile leaves no job waiting at a gate nobody holds.
        """
        stop = threading.Event()

        def hold() -> None:
            while not stop.wait(HOLD_S):
                with contextlib.suppress(OSError, FioError):  # the batch is being torn down
                    self._hold_ready()

        thread = threading.Thread(target=hold, name="ssd-batch-gates", daemon=True)
        self._holder = (stop, thread)
        thread.start()

    def _stop_holding(self) -> None:
        if self._holder is not None:
            stop, thread = self._holder
            stop.set()
            thread.join()
            self._holder = None

    def _normal(self, process: _Process) -> None:
        if self._idle and process.fio is not None and not process.armed:
            process.fio.normal_policy()

    def _tell(self, job: FioJob, word: str) -> None:
        """Write *word* to *job*'s gate (held by :meth:`_arm`) and close it."""
        if not self._open.tell(self._index[job.name], word):
            raise self._dead(job, "left its gate: fio ended")

    # --- releasing jobs -------------------------------------------------------------------

    def measure(self, jobs: Sequence[FioJob], *, pause_s: float = 0.0) -> tuple[JobResult, ...]:
        """Run a point's *jobs* one after another (after *pause_s* of idle); fio's figures.

        *jobs* are one fio process's; the figures are its JSON, read when it exits
        after the last of them.
        """
        process = self._process(jobs[0]) if jobs else None
        if process is None or tuple(jobs) != process.jobs:
            names = ", ".join(job.name for job in jobs) or "none"
            raise FioError(f"fio jobs {names} are not one process of this batch")
        for i, job in enumerate(jobs):
            self.run(job, pause_s=pause_s if i == 0 else 0.0)
        self._start_next()  # its CPU-bound start-up overlaps this fio's end and the recording
        if self.while_exiting is not None:  # about 0.05 s of waiting: libaio's teardown, a poll
            self.while_exiting()
        output = self._finish(process)
        return tuple(output.job(job.name) for job in jobs)

    def run(self, job: FioJob, *, pause_s: float = 0.0) -> int:
        """Run *job* now (after *pause_s* of idle, not measured) and wait for its end."""
        if job.name not in self._index or job.name in self._ran or job.name in self._skipped:
            raise FioError(f"fio job {job.name} is not waiting in this batch")
        self._arm(job)
        if pause_s > 0:
            time.sleep(pause_s)
        n = self._index[job.name]
        process = self._process(job)
        limit = self._limit(job)
        watch: StallWatch | None = None
        try:  # the agent checks the pinned device first (pinned)
            went = self._open.release(n)
        except SafetyError:
            self.abort()
            raise
        if not went:
            raise self._dead(job, "left its gate: fio ended")
        released = time.monotonic()
        deadline = released + limit
        watch_after = self.gates.watch_after  # after the watch's first interval
        while not self._open.ended(n, LIVENESS_S):
            self._hold_ready()
            if not self._alive(process):
                if self._open.ended(n, 0):  # it ended, then its fio exited, since the wait
                    break
                raise self._dead(job, "did not finish: fio ended")
            if time.monotonic() > deadline:
                raise self._dead(job, f"did not finish in {limit:g} s")
            if watch is None and time.monotonic() - released >= watch_after:
                watch = self.gates.watch([job], str(self.target), self._where)
            said = watch() if watch is not None else None
            if said is not None:
                self.abort()
                raise FioError(said)
        self._ran.append(job.name)
        return n

    def _limit(self, job: FioJob) -> float:
        """How long *job* may run (:func:`~pytest_ssd.fio.watch.timeout_for`)."""
        whole = job.runtime_s is None and not (job.io_bytes or job.size)
        return timeout_for([job], self.gates.capacity(str(self.target)) if whole else None)

    def skip(self, job: FioJob) -> None:
        """Let *job* end without I/O (its point was skipped or deselected).

        A job whose fio has not started is only noted: that fio never starts.
        """
        if job.name in self._ran or job.name in self._skipped:
            return
        if self._process(job).fio is not None:
            self._arm(job)
            self._tell(job, "skip")
        self._skipped.append(job.name)

    @property
    def waiting(self) -> list[FioJob]:
        """Jobs neither released nor skipped yet."""
        gone = {*self._ran, *self._skipped}
        return [job for job in self.jobs if job.name not in gone]

    def _finish(self, process: _Process) -> FioOutput:
        """Wait for *process* (its jobs ran or were skipped) and read its output."""
        if process.output is not None:
            return process.output
        for job in process.jobs:
            self.skip(job)
        fio = process.fio
        if fio is None:  # every job of it skipped before it started
            process.output = FioOutput(fio_version="", notes="", jobs=(), disk_util=())
            return process.output
        completed = fio.wait(RUN_MARGIN_S)
        try:
            output = parse_output(completed.stdout)
        except ParseError as exc:
            raise FioError(f"{exited(completed, self._where)} ({exc})") from None
        if completed.returncode:
            raise FioError(exited(completed, self._where))
        check_target(output, str(self.target), self.gates.machine)
        process.output, process.completed = output, completed
        return output

    def close(self) -> BatchRun:
        """Skip what still waits, wait for fio and check its output against the releases."""
        outputs = [self._finish(process) for process in self._processes]
        output = FioOutput(
            fio_version=next((o.fio_version for o in outputs if o.fio_version), ""),
            notes="\n".join(o.notes for o in outputs if o.notes),
            jobs=tuple(job for o in outputs for job in o.jobs),
            disk_util=next((o.disk_util for o in reversed(outputs) if o.disk_util), ()),
        )
        if self._gates is not None:  # the agent removes the batch's folder there
            self._gates.close()
        completed = [p.completed for p in self._processes if p.completed is not None]
        if not completed:
            raise FioError("the fio batch was never started")
        return BatchRun(output, completed[-1], tuple(self._skipped))

    def abort(self) -> None:
        """Kill fio and every job of it (nothing of the batch runs afterwards)."""
        self._aborted = True
        self._stop_holding()
        if self._gates is not None:  # a job waiting in its prerun leaves without I/O
            self._gates.skip_all()
        for process in self._processes:
            if process.fio is not None and process.output is None:
                with contextlib.suppress(FioError):  # the agent ends it with the connection
                    process.fio.kill()
        if self._gates is not None:
            self._gates.close()

    def __enter__(self) -> Batch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running or (self._gates is not None and self._gates.held):
            self.abort()
        else:  # the connection the runner opened for the batch
            self.gates.close()
