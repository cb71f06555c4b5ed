"""Live progress of long transition steps and measurements: percent, MiB/s or IOPS, time left.

On a terminal the line is rewritten in place (through pytest's terminal
reporter, with capture suspended, so pytest's own output stays intact); in a
log (CI, xdist workers) a line is written at most every :data:`LOG_EVERY_S`.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import SsdError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.status import ALL_DIRECTIONS, StatusCallback, moved
from pytest_ssd.machine.machine import Machine
from pytest_ssd.state.accounting import Counters, counters_on
from pytest_ssd.state.written import span

MiB, GiB = 1 << 20, 1 << 30
#: in a log (not a terminal): a line at most this often
LOG_EVERY_S = 60.0
#: a measurement gets a live line when it is planned this long (time-based jobs) ...
MIN_SECONDS = 10.0
#: ... or moves this much
MIN_BYTES = 1 << 30
#: reports closer together than this (fio's last one follows the job's end) set no rate
MIN_RATE_INTERVAL_S = 0.5
#: a random job of blocks up to this size shows its rate in IOPS, any other job in MiB/s
IOPS_MAX_BLOCK = 64 * 1024
#: without fio's own status while it runs: how often the block layer's counters are read
FEED_EVERY_S = 5.0
#: nothing moved for this long: the line says the device is stalled, and gives no estimate
STALLED_S = 10.0
#: Write(text, final): show a progress line; final closes it
Write = Callable[[str, bool], None]


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@dataclass(frozen=True)
class Plan:
    """What a step or measurement will do: an amount of bytes, or (time-based jobs) seconds."""

    total_bytes: int = 0
    total_s: float = 0.0
    #: the directions whose bytes count (a state step: its writes; a measurement: all)
    directions: tuple[str, ...] = ALL_DIRECTIONS
    #: the rate in IOPS (small-block random), not MiB/s
    iops: bool = False

    @property
    def long(self) -> bool:
        """Worth a live line: at least :data:`MIN_SECONDS` or :data:`MIN_BYTES` of work."""
        return self.total_s >= MIN_SECONDS or self.total_bytes >= MIN_BYTES


def plan_of(jobs: Sequence[FioJob], capacity: int) -> Plan:
    """The work of *jobs* run one after another (stonewalled) on a device of *capacity* bytes.

    An amount-based job moves ``io_bytes``, else one pass over its span; each of its
    ``numjobs`` clones does.  With a time-based job among them the plan is in
    seconds: their ramp and run times (a prefill before them makes it run over).
    The rate is in IOPS when the last job (the measured one) is small-block random.
    """
    last = jobs[-1]
    iops = last.pattern == "rnd" and last.block_size <= IOPS_MAX_BLOCK
    timed = [job for job in jobs if job.runtime_s is not None]
    if timed:  # the amount-based jobs among them (a prefill) count in the time it takes
        return Plan(total_s=sum(job.planned_seconds for job in timed), iops=iops)
    amounts = [
        (job.io_bytes if job.io_bytes is not None else span(job, capacity)[1] - job.offset)
        * job.numjobs
        for job in jobs
    ]
    return Plan(total_bytes=sum(amounts), iops=iops)


class Progress:
    """Follows fio's status reports for one step or measurement (see :class:`Plan`).

    Used as a context manager around the run: its last line says ``done`` only when the
    run ended well, and ``stopped, not done`` when it raised (a stall, a failure, Ctrl-C).
    """

    def __init__(self, label: str, plan: Plan, write: Write) -> None:
        self.label, self.plan, self.write = label, plan, write
        self.start = time.monotonic()
        #: when the amount done last grew (a stalled device moves nothing)
        self.moved_at = self.start
        #: (when, bytes, I/Os) of the last report, *when* on fio's clock (see :meth:`__call__`)
        self._last: tuple[float, int, int] | None = None
        self.rate = 0.0
        self.iops = 0.0
        self.done = self.ios = 0

    def __call__(self, doc: dict[str, Any]) -> None:
        now = time.monotonic()
        done, ios = moved(doc, self.plan.directions)
        # rates on fio's clock (its reports may reach us bunched in the pipe); the first
        # report's since we started fio, on ours
        stamp = doc.get("timestamp_ms")
        when = stamp / 1000 if isinstance(stamp, int | float) else now
        then, before, ios_before = self._last or (when - (now - self.start), 0, 0)
        if when - then >= MIN_RATE_INTERVAL_S and done >= before:
            rate, iops = (done - before) / (when - then), (ios - ios_before) / (when - then)
            first = not self.rate
            self.rate = rate if first else 0.7 * self.rate + 0.3 * rate
            self.iops = iops if first else 0.7 * self.iops + 0.3 * iops
        self._last = (when, done, ios)
        if done > self.done or ios > self.ios:
            self.moved_at = now
        self.done, self.ios = done, ios
        self.write(self.line(done, now), False)

    def line(self, done: int, now: float) -> str:
        elapsed = now - self.start
        total = self.plan.total_bytes
        if total:
            pct = 100.0 * done / total
            amount = f"{_size(done, total)}/{_size(total)}"
            eta = _clock((total - done) / self.rate) if self.rate > 0 else "?"
        else:
            pct = 100.0 * elapsed / self.plan.total_s if self.plan.total_s else 0.0
            amount = f"{elapsed:,.0f}/{self.plan.total_s:,.0f} s, {_size(done)}"
            eta = _clock(self.plan.total_s - elapsed) if self.plan.total_s else "?"
            amount = amount if elapsed <= self.plan.total_s else f"{_size(done)}, overrunning"
        still = now - self.moved_at
        if still >= STALLED_S:  # no rate, no time left: nothing says when it moves again
            return (
                f"{self.label}: {min(pct, 100.0):5.1f} %  {amount}  stalled: no I/O completed"
                f" for {_clock(still)}  elapsed {_clock(elapsed)}  left: no estimate"
            )
        return (
            f"{self.label}: {min(pct, 100.0):5.1f} %  {amount}  {self._speed(self.rate, self.iops)}"
            f"  elapsed {_clock(elapsed)}  left {eta}"
        )

    def _speed(self, rate: float, iops: float) -> str:
        return f"{iops:,.0f} IOPS" if self.plan.iops else f"{rate / MiB:,.0f} MiB/s"

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(finished=kind is None)

    def close(self, *, finished: bool = True) -> None:
        took = time.monotonic() - self.start
        size = _size(self.done, self.plan.total_bytes)
        speed = f" ({size}, {self._speed(self.done / took, self.ios / took)})" if took > 0 else ""
        ended = f"done in {_clock(took)}" if finished else f"stopped after {_clock(took)}, not done"
        self.write(f"{self.label}: {ended}{speed}", True)


class Ticker:
    """A line by elapsed time for work whose progress cannot be followed (a dd, a short job
    that runs long): nothing for its first :data:`MIN_SECONDS`, then the time it has taken.

    Used as a context manager; the thread that writes is a daemon and is stopped on exit.
    """

    def __init__(self, label: str, write: Write, planned: str = "", every_s: float = 1.0) -> None:
        self.label, self.write, self.planned, self.every_s = label, write, planned, every_s
        self.start = time.monotonic()
        self.shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pytest-ssd-ticker", daemon=True)

    def __enter__(self) -> Ticker:
        self.start = time.monotonic()
        self._thread.start()
        return self

    def _loop(self) -> None:
        if self._stop.wait(MIN_SECONDS):
            return
        while True:
            self.shown = True
            self.write(self.line(time.monotonic()), False)
            if self._stop.wait(self.every_s):
                return

    def line(self, now: float) -> str:
        planned = f" ({self.planned})" if self.planned else ""
        return f"{self.label}: running{planned}  elapsed {_clock(now - self.start)}"

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.shown:  # a run that raised (stalled, failed, interrupted) is not done
            took = _clock(time.monotonic() - self.start)
            ended = f"done in {took}" if kind is None else f"stopped after {took}, not done"
            self.write(f"{self.label}: {ended}", True)


class KernelFeed:
    """Progress from the device's block-layer counters, read on its machine every few seconds.

    ``fio --client`` gets a status report only with the result, when fio ends; the
    machine's ``/sys/class/block/<dev>/stat`` (bytes and I/Os completed, every I/O of the
    device: the session holds its lock) tells how far the run is meanwhile.  Each
    reading goes to *follow* as a status document of one job, on this machine's clock.
    """

    def __init__(
        self, follow: StatusCallback, machine: Machine, kernel_name: str, every_s: float
    ) -> None:
        self.follow, self.machine, self.kernel_name = follow, machine, kernel_name
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start: Counters | None = None

    def __enter__(self) -> KernelFeed:
        self._start = counters_on(self.machine, self.kernel_name)
        if self._start is not None:
            self._thread = threading.Thread(target=self._loop, name="ssd-progress", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._read()

    def _read(self) -> None:
        with contextlib.suppress(SsdError, ValueError, IndexError):  # next time
            now = counters_on(self.machine, self.kernel_name)
            if now is not None and self._start is not None:
                self.follow(_document(now - self._start))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._read()  # the end: the "done" line says what the run moved in all


def _document(moved: Counters) -> dict[str, Any]:
    """*moved* as a status document of one job (what :func:`~.status.moved` reads)."""
    return {
        "timestamp_ms": time.time() * 1000,
        "jobs": [
            {
                "read": {"io_bytes": moved.read, "total_ios": moved.reads},
                "write": {"io_bytes": moved.written, "total_ios": moved.writes},
            }
        ],
    }


@contextlib.contextmanager
def feeding(
    follow: Progress | None, machine: Machine, kernel_name: str | None, live_status: bool
) -> Iterator[StatusCallback | None]:
    """The ``on_status`` of a fio run on *machine* whose progress *follow* shows.

    *live_status*: fio's own status reports reach this process while it runs, once a
    second (its runner's :attr:`~pytest_ssd.fio.runners.FioRunner.live_status`), and feed
    *follow*.  Otherwise (``fio --client`` hears them only at the end) a
    :class:`KernelFeed` feeds *follow* from the device's counters there meanwhile; a
    regular file has none: the line at the end only.
    """
    if live_status or follow is None:
        yield follow
        return
    if kernel_name is None:
        yield None
        return
    with KernelFeed(follow, machine, kernel_name, FEED_EVERY_S):
        yield None


def _size(n: float, scale: float = 0.0) -> str:
    """*n* in MiB, or in GiB when *scale* (the total, else *n*) is 10 GiB or more."""
    if max(n, scale) < 10 * GiB:
        return f"{n / MiB:,.0f} MiB"
    return f"{n / GiB:,.1f} GiB"


def terminal_writer(config: pytest.Config) -> Write:
    """Progress lines on pytest's terminal (looked up when used: it registers after us)."""
    last = [-math.inf]  # the first line is written (monotonic time may start near 0)
    open_line = [False]

    def write(text: str, final: bool) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or capture is None:
            return
        tty = bool(getattr(reporter, "isatty", False))
        now = time.monotonic()
        if not tty and not final and now - last[0] < LOG_EVERY_S:
            return
        last[0] = -math.inf if final else now  # the next step's first line is shown at once
        with capture.global_and_fixture_disabled():
            if tty:
                if not open_line[0]:  # keep pytest's line (the test file) above ours
                    reporter.write("\n")
                reporter.rewrite(text, erase=True)
                open_line[0] = not final
                if final:
                    reporter.write("\n")
            else:
                reporter.write_line(text)

    return write


def log_writer(path: Path) -> Write:
    """Progress lines appended to *path*, at most every :data:`LOG_EVERY_S` (and the last)."""
    last = [-math.inf]  # the first line is written (monotonic time may start near 0)

    def write(text: str, final: bool) -> None:
        now = time.monotonic()
        if final or now - last[0] >= LOG_EVERY_S:
            last[0] = now
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as fh:
                fh.write(f"{time.strftime('%H:%M:%S')} {text}\n")

    return write
