"""What a transition did to the device, from the kernel's block-layer counters.

``/sys/block/<dev>/stat`` counts sectors of 512 bytes whatever the LBA size
(Documentation/block/stat.rst): field 3 read, 7 written, 14 discarded.  A
regular file has no such counters: its bytes come from fio alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.machine import Machine

SECTOR = 512
_READ, _WRITE, _DISCARD = 2, 6, 13  # 0-based fields of the stat file
_READS, _WRITES = 0, 4


@dataclass(frozen=True)
class Counters:
    """Bytes read, written and discarded so far, as the kernel counts them."""

    read: int
    written: int
    discarded: int
    #: completed I/Os (fields 1 and 5), for a live IOPS figure
    reads: int = 0
    writes: int = 0

    def __sub__(self, earlier: Counters) -> Counters:
        return Counters(
            self.read - earlier.read,
            self.written - earlier.written,
            self.discarded - earlier.discarded,
            self.reads - earlier.reads,
            self.writes - earlier.writes,
        )

    def as_dict(self) -> dict[str, int]:
        return {"read": self.read, "written": self.written, "discarded": self.discarded}


def counters_on(machine: Machine, kernel_name: str | None) -> Counters | None:
    """The counters of block device *kernel_name* on *machine* now (None: a regular file).

    A block device whose counters cannot be read is an error (:class:`DeviceError`): its
    bytes would otherwise silently come from fio alone.
    """
    if kernel_name is None:
        return None
    path = f"/sys/class/block/{kernel_name}/stat"
    text = machine.read(path)
    if not text:
        raise DeviceError(f"{path}{machine.on}: the kernel's counters of the device cannot be read")
    return parse_counters(text)


def parse_counters(text: str) -> Counters:
    """The counters of a ``stat`` file's text."""
    fields = text.split()
    discarded = int(fields[_DISCARD]) if len(fields) > _DISCARD else 0
    return Counters(
        int(fields[_READ]) * SECTOR,
        int(fields[_WRITE]) * SECTOR,
        discarded * SECTOR,
        int(fields[_READS]),
        int(fields[_WRITES]),
    )
