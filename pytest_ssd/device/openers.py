"""Who holds a device or file open, found as ``fuser`` does: every process's open files.

An exclusive open (``O_EXCL``) only tells about other exclusive openers and
mounts; a program that opened the device plainly (a database on a raw device, a
``dd`` still running, a VM's disk) is seen only in ``/proc/PID/fd``.  Files are
also matched in ``/proc/PID/maps`` (a mapped file).  pytest-ssd itself does not
count: this process and its ancestors (an xdist worker's controller holds the
session's lock on the device).  udev's probes open a device for a moment after a
write, so a process must be seen in every one of a few scans to count.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: scans a process must be seen in, and the pause between them
SCANS = 3
SCAN_PAUSE_S = 0.2


def shown(text: str) -> str:
    """*text* on one line: control characters as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def describe(pid: int, command: str) -> str:
    """'pid 1234 (pytest suites/smoke --dut=/dev/loop3)', shortened to one readable line."""
    command = shown(command.strip())
    if len(command) > 120:
        command = command[:117] + "..."
    return f"pid {pid} ({command})" if command else f"pid {pid}"


def describe_pid(pid: int) -> str:
    """:func:`describe` of a process on this machine."""
    try:
        argv = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
        command = " ".join(a.decode(errors="replace") for a in argv if a)
    except OSError:
        command = ""
    return describe(pid, command)


def ancestors(pid: int | None = None) -> set[int]:
    """*pid* (default: this process) and every process above it."""
    found: set[int] = set()
    current = pid or os.getpid()
    while current > 0 and current not in found:
        found.add(current)
        try:
            text = (PROC / str(current) / "stat").read_text()
        except OSError:
            break
        current = int(text.rpartition(")")[2].split()[1])  # field 4: the parent
    return found


def _matches(st: os.stat_result, devices: set[int], files: set[tuple[int, int]]) -> bool:
    if stat.S_ISBLK(st.st_mode):
        return st.st_rdev in devices
    return (st.st_dev, st.st_ino) in files


def _open_in(pid: Path, devices: set[int], files: set[tuple[int, int]]) -> bool:
    try:
        fds = list((pid / "fd").iterdir())
    except OSError:  # gone, or not ours to read
        return False
    for fd in fds:
        try:
            if _matches(fd.stat(), devices, files):
                return True
        except OSError:
            continue
    return bool(files) and _mapped_in(pid, files)


def _mapped_in(pid: Path, files: set[tuple[int, int]]) -> bool:
    try:
        lines = (pid / "maps").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 5 or fields[4] == "0":
            continue
        major, _, minor = fields[3].partition(":")
        try:
            key = (os.makedev(int(major, 16), int(minor, 16)), int(fields[4]))
        except ValueError:
            continue
        if key in files:
            return True
    return False


def scan(devices: Iterable[int], files: Iterable[tuple[int, int]] = ()) -> set[int]:
    """Pids (not this process or its ancestors) with one of *devices* or *files* open now."""
    wanted, mapped = set(devices), set(files)
    ours = ancestors()
    found = set()
    for entry in PROC.iterdir():
        if entry.name.isdigit() and int(entry.name) not in ours and _open_in(entry, wanted, mapped):
            found.add(int(entry.name))
    return found


def openers(devices: Iterable[int], files: Iterable[tuple[int, int]] = ()) -> list[int]:
    """Pids holding one of *devices* or *files* open in every one of :data:`SCANS` scans.

    Nothing found in the first scan ends at once (the common case costs one scan).
    """
    wanted, mapped = set(devices), set(files)
    seen = scan(wanted, mapped)
    for _ in range(SCANS - 1):
        if not seen:
            break
        time.sleep(SCAN_PAUSE_S)
        seen &= scan(wanted, mapped)
    return sorted(seen)
