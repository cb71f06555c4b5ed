"""Facts about the host recorded with every run: CPU clock, memory, other busy processes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.identity import binary_size
from pytest_ssd.host.io import Roots, read_attribute
from pytest_ssd.host.settings import Reading
from pytest_ssd.machine.snapshot import Reads

#: a process using at least this share of one CPU while sampled counts as busy
BUSY_SHARE = 0.10
BUSY_SAMPLE_S = 0.5
BUSY_TITLE = "Other busy processes"
TICKS = os.sysconf("SC_CLK_TCK")
#: what the facts read: cpu0's clock, memory, and every process twice (busy ones)
READS = Reads(
    files=(
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
        "/proc/cpuinfo",
        "/proc/meminfo",
    ),
    sampled=("/proc/[0-9]*/stat",),
)


def cpu_frequency(roots: Roots) -> Reading:
    """cpu0's clock: cpufreq's current frequency and driver, else /proc/cpuinfo's ``cpu MHz``."""
    title = "CPU frequency"
    cpufreq = roots.sysfs / "devices" / "system" / "cpu" / "cpu0" / "cpufreq"
    khz = read_attribute(cpufreq / "scaling_cur_freq")
    if khz is not None and khz.isdecimal():
        driver = read_attribute(cpufreq / "scaling_driver") or "cpufreq"
        return Reading(
            "cpu-frequency", title, f"{int(khz) / 1000:.0f} MHz ({driver})", source=str(cpufreq)
        )
    cpuinfo = roots.procfs / "cpuinfo"
    for line in (read_attribute(cpuinfo) or "").splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "cpu MHz":
            mhz = float(value)
            return Reading(
                "cpu-frequency",
                title,
                f"{mhz:.0f} MHz (no cpufreq driver)",
                source=f"{cpuinfo} (cpu0)",
            )
    return Reading("cpu-frequency", title, None, source=f"no {cpufreq} and no cpu MHz in {cpuinfo}")


def memory(roots: Roots) -> Reading:
    """Total and available memory from /proc/meminfo."""
    meminfo = roots.procfs / "meminfo"
    kib: dict[str, int] = {}
    for line in (read_attribute(meminfo) or "").splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdecimal():
            kib[name] = int(fields[0])
    if "MemTotal" not in kib:
        return Reading("memory", "Memory", None, source=f"no MemTotal in {meminfo}")
    value = f"{binary_size(kib['MemTotal'] * 1024)} total"
    if "MemAvailable" in kib:
        value += f", {binary_size(kib['MemAvailable'] * 1024)} available"
    return Reading("memory", "Memory", value, source=str(meminfo))


@dataclass(frozen=True)
class ProcessTimes:
    """What /proc/PID/stat says about one process."""

    pid: int
    ppid: int
    name: str
    #: user + system CPU time, in clock ticks
    ticks: int


def _stat(path: Path) -> ProcessTimes | None:
    text = read_attribute(path / "stat")
    if text is None or ")" not in text:
        return None  # the process ended while we looked
    head, _, tail = text.rpartition(")")
    fields = tail.split()
    pid_text, _, name = head.partition(" (")
    # after the name: state ppid ... utime (14th field of stat) stime (15th)
    return ProcessTimes(int(pid_text), int(fields[1]), name, int(fields[11]) + int(fields[12]))


def snapshot(procfs: Path) -> dict[int, ProcessTimes]:
    """Every process's CPU time now."""
    found = (_stat(p) for p in procfs.iterdir() if p.name.isdecimal())
    return {p.pid: p for p in found if p is not None}


def _ours(processes: dict[int, ProcessTimes], me: int) -> set[int]:
    """This process and its descendants (xdist workers, fio): not 'other' processes."""
    ours = {me}
    grew = True
    while grew:
        more = {p.pid for p in processes.values() if p.ppid in ours} - ours
        ours |= more
        grew = bool(more)
    return ours


def busy_processes(
    roots: Roots,
    seconds: float = BUSY_SAMPLE_S,
    sleep: Callable[[float], None] = time.sleep,
    me: int | None = None,
) -> Reading:
    """Other processes using ≥ 10 % of a CPU over *seconds* (METHOD §9: stop other daemons)."""
    if not roots.procfs.is_dir():
        return Reading("busy-processes", BUSY_TITLE, None, "0", f"no {roots.procfs}")
    before = snapshot(roots.procfs)
    sleep(seconds)
    after = snapshot(roots.procfs)
    me = os.getpid() if me is None else me
    return busy_between(before, after, seconds, me=me, procfs=roots.procfs)


def busy_between(
    before: dict[int, ProcessTimes],
    after: dict[int, ProcessTimes],
    seconds: float,
    *,
    me: int,
    ticks: int = TICKS,
    procfs: Path = Path("/proc"),
) -> Reading:
    """Processes other than *me* and its descendants busy between two snapshots."""
    ours = _ours(after, me)
    busy = []
    for pid, now in after.items():
        then = before.get(pid)
        if pid in ours or then is None:
            continue
        share = (now.ticks - then.ticks) / ticks / seconds
        if share >= BUSY_SHARE:
            busy.append((share, f"{now.name} {pid} {share:.0%}"))
    busy.sort(reverse=True)
    names = ", ".join(text for _, text in busy[:5]) + (", …" if len(busy) > 5 else "")
    value = f"{len(busy)} ({names})" if busy else "0"
    source = f"{procfs}/*/stat: ≥ {BUSY_SHARE:.0%} of a CPU over {seconds:g} s"
    return Reading("busy-processes", BUSY_TITLE, value, "0", source)
