"""How busy a device's machine was while fio measured it, from the kernel's ``/proc/stat``.

A run's repeats and a baseline's are comparable only when the machine did the same
beside them.  ``/proc/stat``'s first line counts the jiffies all CPUs spent busy and
idle (idle and iowait: waiting is not work); read before and after a fio run, it gives
the CPUs busy during the run.  fio reports its own CPU per job (``usr_cpu``,
``sys_cpu``: percent of one CPU over the job's time); what is left is the other work on
the machine: other processes, and the kernel's own for the I/O (a loop device's threads,
interrupts), which a workload does alike in two runs.  Where the kernel has PSI,
``/proc/pressure/cpu`` adds the share of the run some task was ready and waited for a CPU:
it keeps rising once every CPU is busy, where the busy share cannot.  Both files are read
at once each side, over the device's machine (one round trip to a test host), or through
a batch's agent where fio runs (a request on its socket: an SSH command to a test host
took 0.1-0.15 s, twice a point).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from pytest_ssd.fio.results import JobResult
from pytest_ssd.machine.machine import FileReader

PROC_STAT = "/proc/stat"
#: the kernel's CPU pressure (PSI): µs some runnable task waited for a CPU, in ``total=``
PRESSURE = "/proc/pressure/cpu"
#: the idle columns of the ``cpu`` line, counted from user as 0 (idle, iowait); the rest busy
_IDLE = (3, 4)
#: the columns summed (user .. steal: guest time is counted in user already)
_COUNTED = 8


@dataclass(frozen=True)
class CpuTimes:
    """The jiffies of all CPUs so far: busy and in all, and how many CPUs; the µs some task
    waited for a CPU (None: a kernel without PSI) and when that was read (monotonic µs)."""

    busy: int
    total: int
    cpus: int
    waited_us: int | None = None
    at_us: int = 0


def parse_stat(text: str) -> CpuTimes | None:
    """``/proc/stat``'s totals, or None when it holds no ``cpu`` line."""
    lines = text.splitlines()
    head = next((line.split() for line in lines if line.startswith("cpu ")), None)
    if head is None:
        return None
    values = [int(v) for v in head[1 : 1 + _COUNTED]]
    idle = sum(values[i] for i in _IDLE if i < len(values))
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return CpuTimes(sum(values) - idle, sum(values), max(cpus, 1))


def parse_pressure(text: str) -> int | None:
    """The ``some`` line's ``total=`` of ``/proc/pressure/cpu`` (µs), or None."""
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split()[1:]:
                name, _, value = field.partition("=")
                if name == "total" and value.isdecimal():
                    return int(value)
    return None


def read_times(reader: FileReader) -> CpuTimes | None:
    """The CPU times now of the machine *reader* reads (None: no ``/proc/stat`` there)."""
    text, pressure = reader.read_many([PROC_STAT, PRESSURE])  # one round trip
    times = parse_stat(text) if text else None
    if times is None:
        return None
    waited = parse_pressure(pressure) if pressure else None
    return replace(times, waited_us=waited, at_us=time.monotonic_ns() // 1000)


def busy_cpus(before: CpuTimes, after: CpuTimes) -> float | None:
    """The CPUs busy on average between two readings (None: no time passed)."""
    total = after.total - before.total
    if total <= 0:
        return None
    return after.cpus * (after.busy - before.busy) / total


def fio_cpus(results: Iterable[JobResult], wall_s: float) -> float:
    """The CPUs fio's jobs used on average over *wall_s* seconds (their usr + sys)."""
    if wall_s <= 0:
        return 0.0
    used = sum((r.usr_cpu + r.sys_cpu) / 100 * r.elapsed_s for r in results)
    return used / wall_s


def host_cpus(
    before: CpuTimes | None, after: CpuTimes | None, results: Iterable[JobResult], wall_s: float
) -> dict[str, float] | None:
    """What a measurement records of its machine: CPUs ``busy`` in all, ``fio``'s, and the
    ``others`` beside fio; None when the machine has no counters."""
    if before is None or after is None:
        return None
    busy = busy_cpus(before, after)
    if busy is None:
        return None
    fio = fio_cpus(results, wall_s)
    found = {"busy": round(busy, 3), "fio": round(fio, 3), "others": round(max(busy - fio, 0.0), 3)}
    span = after.at_us - before.at_us
    if before.waited_us is not None and after.waited_us is not None and span > 0:
        # the share of the run some task was ready and waited for a CPU (PSI cpu some)
        found["waiting"] = round(min((after.waited_us - before.waited_us) / span, 1.0), 3)
    return found
