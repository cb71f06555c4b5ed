"""The other namespaces of an NVMe namespace's controller, and what the kernel saw written to them.

A namespace that is not the device under test is never written: the block layer's
counters of each other namespace of the same controller (``/sys/class/block/<ns>/stat``:
writes, sectors written, discards, flushes) are read before and after the test's
writes, on any machine in one read (:meth:`~pytest_ssd.machine.machine.Machine.read_many`).
They count every write the kernel passed on, pytest-ssd's or anyone's; a write
behind the kernel's back (another host of a shared namespace) is not seen, which
is what a content checksum (the end-to-end test's) adds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_ssd.machine.machine import Machine

#: a namespace's block device (``nvme0n2``; with native multipath, the head of its subsystem)
NAMESPACE = re.compile(r"(nvme\d+)n(\d+)")
#: the fields of a block device's ``stat`` that count writes: writes, sectors written,
#: discards, sectors discarded, flushes
WRITE_FIELDS = (4, 6, 11, 13, 15)
WRITE_NAMES = ("writes", "sectors written", "discards", "sectors discarded", "flushes")

Counts = tuple[int, ...]


def others(machine: Machine, name: str) -> list[str]:
    """The other namespaces of *name*'s controller on *machine* ([] for a device that is no
    NVMe namespace)."""
    found = NAMESPACE.fullmatch(name)
    if found is None:
        return []
    paths = machine.glob(f"/sys/class/block/{found.group(1)}n*")
    names = (path.rpartition("/")[2] for path in paths)
    return sorted(n for n in names if NAMESPACE.fullmatch(n) and n != name)


def written(machine: Machine, names: Sequence[str]) -> dict[str, Counts | None]:
    """Each namespace's write counters now (None: unreadable), in one read."""
    texts = machine.read_many([f"/sys/class/block/{name}/stat" for name in names])
    return {name: _counts(text) for name, text in zip(names, texts, strict=True)}


def _counts(text: str | None) -> Counts | None:
    fields = (text or "").split()
    if len(fields) <= max(WRITE_FIELDS[:4]) or not all(f.isdigit() for f in fields):
        return None
    return tuple(int(fields[i]) for i in WRITE_FIELDS if i < len(fields))


def changes(before: dict[str, Counts | None], after: dict[str, Counts | None]) -> list[str]:
    """What was written to each namespace between *before* and *after* ("nvme0n1: 8 writes,
    64 sectors written"); a namespace gone or unreadable is said so."""
    said = []
    for name, was in before.items():
        now = after.get(name)
        if was is None or now is None:
            said.append(f"{name}: its counters could not be read")
            continue
        moved = [
            f"{b - a} {what}" for a, b, what in zip(was, now, WRITE_NAMES, strict=False) if b != a
        ]
        if moved:
            said.append(f"{name}: {', '.join(moved)}")
    return said
