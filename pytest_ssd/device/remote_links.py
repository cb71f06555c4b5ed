"""What sysfs on a test host says of a disk's link and SCSI device, copied here for the summary.

The device summary reads the PCIe link of an NVMe controller's PCI function,
the SATA link of a libata port and the SCSI device's vendor and cache type by
walking up from the disk's ``device`` link (:mod:`.link`).  What it reads is
what it declares (:data:`.summary.READS`); one command on the host prints those
files, the disk's folder, where its ``device`` link leads and (with native NVMe
multipath) its controllers, and :func:`sysfs_copy` writes them into a small copy
of the host's ``/sys`` with the same links (:mod:`pytest_ssd.machine.snapshot`),
so :func:`~.summary.summarize` reads it exactly as a local one.
"""

from __future__ import annotations

from pathlib import Path

from pytest_ssd.device.summary import READS
from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.snapshot import SnapshotError, take, take_all


def sysfs_copy(machine: Machine, kernel_name: str, root: Path) -> Path:
    """A copy of what the summary reads of *kernel_name*'s sysfs on *machine*, under *root*."""
    try:
        return take(machine, READS, root, device=kernel_name, what="sysfs links").sysfs
    except SnapshotError as exc:
        raise DeviceError(str(exc)) from None


def sysfs_copies(machine: Machine, kernel_names: list[str], root: Path) -> dict[str, Path]:
    """:func:`sysfs_copy` of several devices, in one command: each one's copy of /sys (one
    the host does not have is left out)."""
    try:
        found = take_all(machine, READS, root, devices=kernel_names, what="sysfs links")
    except SnapshotError as exc:
        raise DeviceError(str(exc)) from None
    return {name: copy.sysfs for name, copy in found.items()}
