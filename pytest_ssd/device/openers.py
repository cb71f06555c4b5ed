"""Who holds a device or file open, in one line: ``pid 1234 (its command)``.

An exclusive open (``O_EXCL``) only tells about other exclusive openers and
mounts; a program that opened the device plainly (a database on a raw device, a
``dd`` still running, a VM's disk) is seen only in ``/proc/PID/fd``, as ``fuser``
finds it (each machine's look: :meth:`~pytest_ssd.machine.facts.Facts.holding`).
pytest-ssd itself does not count.  udev's probes open a device for a moment after a
write, so a process must be seen in every one of a few scans to count
(:meth:`~.view.View.openers`).
"""

from __future__ import annotations

from pytest_ssd.machine.facts import command_here, describe, shown

__all__ = ["SCANS", "SCAN_PAUSE_S", "describe", "describe_pid", "shown"]

#: scans a process must be seen in, and the pause between them
SCANS = 3
SCAN_PAUSE_S = 0.2


def describe_pid(pid: int) -> str:
    """:func:`describe` of a process on this machine."""
    return describe(pid, command_here(pid))
