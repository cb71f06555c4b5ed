"""A test host's device identified exactly as a local one: its sysfs attributes, copied here.

The files :func:`~.identity.identify_block` reads are those it declares
(:data:`.identity.READS`); one command on the host prints them and they are written
into a small copy of the host's ``/sys`` (the same paths and links, so the transport
is told by the same rules, :mod:`pytest_ssd.machine.snapshot`), which
``identify_block`` reads.  NVMe devices are asked ``nvme id-ctrl`` and ``id-ns`` on
the host.  The identity names the device by its path on the host.  :func:`copy_blocks` and
:func:`identify_copied` identify a host's devices from one copy.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from pytest_ssd.device import nvme
from pytest_ssd.device.identity import READS, DeviceIdentity, identify_block
from pytest_ssd.errors import DeviceError, SsdError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.snapshot import Snapshot, SnapshotError, take, take_all


def identify_remote(
    machine: Machine, path: str, kernel_name: str, artifacts: Path | None = None
) -> DeviceIdentity:
    """Identify block device *kernel_name* of *machine*, opened there as *path*."""
    with tempfile.TemporaryDirectory(prefix="ssd-sysfs-") as tmp:
        try:
            copy = take(machine, READS, Path(tmp), device=kernel_name, what="sysfs")
        except SnapshotError as exc:
            raise DeviceError(str(exc)) from None
        return identify_block(
            Path(path),
            kernel_name,
            sysfs_root=copy.sysfs,
            query_nvme=lambda device: nvme.query(device, artifacts, machine),
        )


def copy_blocks(machine: Machine, names: list[str], root: Path) -> dict[str, Snapshot]:
    """One copy under *root* of what identifies each block device of *names* on *machine*
    (a name it does not have is left out; nothing when the copy fails, or for no name)."""
    if not names:
        return {}
    try:
        return take_all(machine, READS, root, devices=names, what="sysfs")
    except SnapshotError:
        return {}


def identify_copied(
    machine: Machine,
    paths: dict[str, str],
    copies: dict[str, Snapshot],
    artifacts: Path | None = None,
) -> dict[str, DeviceIdentity]:
    """Identify the block devices of *machine* (*paths*: each one's path there -> kernel
    name) from *copies* of its sysfs (:func:`copy_blocks`); those that could not be are
    left out (:func:`identify_remote` tells why)."""
    found: dict[str, DeviceIdentity] = {}
    for path, name in paths.items():
        if name in copies:
            with contextlib.suppress(SsdError):
                found[path] = identify_block(
                    Path(path),
                    name,
                    sysfs_root=copies[name].sysfs,
                    query_nvme=lambda device: nvme.query(device, artifacts, machine),
                )
    return found
