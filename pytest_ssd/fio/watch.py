"""How long fio may run, and how long it may go without completing any I/O.

A hung drive does not fail fio's I/O: it never completes it, and fio waits with
it.  So fio is watched from the kernel's block-layer counters of the device it
works on (``/sys/class/block/<dev>/stat``: I/Os and sectors completed, every I/O
of the device, locally or on a test host, lone or batched; a regular file is
watched through the device its filesystem is on).  When none of them moves for
the job's allowance, fio is stopped: one line, the test fails, the session goes on.

The allowance (:func:`stall_allowance`) is generous on purpose: a real drive
stops completing I/O for seconds during garbage collection, a cache flush or a
full drive's SLC folding, and the kernel's own I/O timeout (30 s for NVMe and
SCSI) aborts, retries and resets the controller before giving up.  Reads get
twice that timeout, writes four times it (they wait on garbage collection).
``PYTEST_SSD_STALL_S`` sets one allowance for every job (the tests shorten it).

The whole run gets a timeout by its size (:func:`timeout_for`): a time-based
job its ramp and run time, an amount-based one its bytes at :data:`FLOOR_RATE`,
plus :data:`TIMEOUT_MARGIN_S`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_ssd.errors import ConfigError, SsdError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.machine.machine import FileReader, Machine

#: the environment variable that sets every job's allowance, in seconds
STALL_ENV = "PYTEST_SSD_STALL_S"
#: seconds a reading job may complete no I/O: twice the kernel's 30 s I/O timeout
READ_STALL_S = 60.0
#: seconds a writing job may complete no I/O: garbage collection and cache flushes too
WRITE_STALL_S = 120.0
#: the slowest rate an amount-based job is given time for (bytes/s): 256 IOPS of 4 KiB
FLOOR_RATE = 1 << 20
#: seconds allowed beyond a run's planned time (fio's start-up, a slow host)
TIMEOUT_MARGIN_S = 120.0
#: how often a device's counters are read at most (a machine may read them less often:
#: :attr:`~pytest_ssd.machine.machine.Machine.poll_s`)
EVERY_S = 1.0
#: the fields of a block device's ``stat`` that count completed work: reads, sectors
#: read, writes, sectors written, discards, sectors discarded, flushes (not the
#: in-flight count or the busy times, which move while nothing completes)
_DONE_FIELDS = (0, 2, 4, 6, 11, 13, 15)

Counters = Callable[[], tuple[int, ...] | None]


def stall_override() -> float | None:
    """The allowance ``PYTEST_SSD_STALL_S`` sets; :class:`ConfigError` for a bad value."""
    text = os.environ.get(STALL_ENV)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 1 <= value <= 86400):
        raise ConfigError(f"{STALL_ENV}={text!r}: give seconds between 1 and 86400")
    return value


def stall_allowance(jobs: Sequence[FioJob]) -> float:
    """Seconds *jobs* may go without completing any I/O (see the module's notes)."""
    override = stall_override()
    if override is not None:
        return override
    return WRITE_STALL_S if any(job.writes for job in jobs) else READ_STALL_S


def timeout_for(jobs: Sequence[FioJob], capacity: int | None) -> float:
    """Seconds *jobs* (one after another) may take at most, by their size.

    A job without ``io_bytes`` or ``size`` moves the target's *capacity* (unknown:
    a day's worth of :data:`FLOOR_RATE`).
    """
    total = TIMEOUT_MARGIN_S
    for job in jobs:
        if job.runtime_s is not None:
            total += job.planned_seconds
            continue
        amount = job.io_bytes or job.size or capacity or FLOOR_RATE * 86400
        total += job.ramp_s + amount * job.numjobs / FLOOR_RATE
    return total


def capacity(machine: Machine, target: str) -> int | None:
    """Bytes of *target* on *machine* (a block device, or a regular file); None when unknown."""
    try:
        name = machine.block_name(target)
        if name is None:
            return machine.file_size(target)
        text = (machine.read(f"/sys/class/block/{name}/size") or "").strip()
    except SsdError:  # the connection's trouble is fio's to report
        return None
    return int(text) * 512 if text.isdigit() else None


def parse_done(text: str) -> tuple[int, ...]:
    """The completed-work fields of a block device's ``stat`` text."""
    fields = text.split()
    return tuple(int(fields[i]) for i in _DONE_FIELDS if i < len(fields))


def counters(machine: Machine, target: str, reader: FileReader | None = None) -> Counters | None:
    """A reader of the completed work of the device *target* is (or is on) on *machine*,
    read by *reader* there (None: the machine itself); None: none."""
    name = machine.block_name(target, holding=True)
    if name is None:
        return None
    path = f"/sys/class/block/{name}/stat"
    files = reader or machine

    def read() -> tuple[int, ...] | None:
        try:
            (text,) = files.read_many([path])
            return parse_done(text) if text else None
        except (SsdError, ValueError):  # the connection's trouble is fio's to report
            return None

    return read


@dataclass
class StallWatch:
    """Says why fio is to be stopped once *counters* stand still for *allowance_s*."""

    counters: Counters
    allowance_s: float
    #: where fio works, for the message
    where: str
    every_s: float = EVERY_S
    #: what the machine's kernel said happened to the device (it dropped off the bus, it
    #: changed size: :attr:`~pytest_ssd.machine.machine.Machine.device_faults`), asked first
    fault: Callable[[], str | None] = lambda: None
    _last: tuple[int, ...] | None = None
    #: when the counters last moved, and when they were last read
    _moved: float = field(init=False)
    _read: float = field(init=False)

    def __post_init__(self) -> None:
        self._moved = self._read = time.monotonic()

    def __call__(self) -> str | None:
        said = self.fault()
        if said is not None:
            return said
        now = time.monotonic()
        if now - self._read < self.every_s:
            return None
        self._read = now
        done = self.counters()
        if done is None or done != self._last:  # unreadable counts as progress: no false stop
            self._last, self._moved = done, now
            return None
        if now - self._moved < self.allowance_s:
            return None
        return (
            f"fio made no progress on {self.where} for {self.allowance_s:g} s (no I/O completed:"
            f" the device or its driver hangs); stopped"
        )


def stall_watch(
    machine: Machine,
    jobs: Sequence[FioJob],
    target: str,
    where: str,
    reader: FileReader | None = None,
) -> StallWatch | None:
    """The stall watch of *jobs* on *target* on *machine* (*where* in its message); None
    where none can be.  Its counters are read every
    :attr:`~pytest_ssd.machine.machine.Machine.poll_s` by the machine, or every
    :data:`EVERY_S` by *reader* there (a batch's agent: a request, not a command).  A fault
    the machine's kernel reports on the device stops fio at once."""
    every = machine.poll_s if reader is None else EVERY_S
    watch = _watch(jobs, counters(machine, target, reader), where, every)
    if watch is not None:
        watch.fault = _fault_of(machine, target)
    return watch


def _fault_of(machine: Machine, target: str) -> Callable[[], str | None]:
    """What *machine*'s kernel said of *target*'s device, if anything.  The device's name is
    looked up only once the machine reports a fault at all: on a test host that is a command
    away, and a watch is made for every job (75 ms a job there, 0.37 s a low-QD point)."""
    named: list[str | None] = []

    def fault() -> str | None:
        faults = machine.device_faults
        if not faults:
            return None
        if not named:
            named.append(machine.block_name(target, holding=True))
        return faults.get(named[0]) if named[0] is not None else None

    return fault


def _watch(
    jobs: Sequence[FioJob], counters: Counters | None, where: str, every: float
) -> StallWatch | None:
    if counters is None:
        return None
    watch = StallWatch(counters, stall_allowance(jobs), where, every)
    watch._last = counters()  # the counters before fio starts
    return watch
