"""The link a disk hangs off, as sysfs shows it: PCIe for NVMe, SATA for libata disks.

Both are found by walking up from the disk's ``device`` link in the resolved
sysfs tree, never by guessing names: an NVMe namespace sits under its
controller, which sits under a PCI function (``0000:01:00.0``) whose
``current_link_speed``, ``current_link_width``, ``max_link_speed`` and
``max_link_width`` describe the link; with native NVMe multipath the namespace
sits under ``nvme-subsysN`` instead, which links to its controllers.  A SATA
disk sits under its libata port ``ataN``, whose host link ``linkN`` keeps
``sata_spd`` and ``hw_sata_spd_limit``.  Conventional PCI (a virtio disk in
QEMU's i440fx machine) and NVMe over fabrics have no link attributes: the
readers return ``None`` and the summary says "not exposed".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.machine.snapshot import Reads

_PCI_FUNCTION = re.compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_NVME_CONTROLLER = re.compile(r"^nvme\d+$")
_ATA_PORT = re.compile(r"^ata(\d+)$")
#: what :func:`pcie_link` and :func:`sata_link` read above a disk's device
READS = Reads(
    above=(
        "current_link_speed",
        "current_link_width",
        "max_link_speed",
        "max_link_width",
        "link*/ata_link/link*/sata_spd",
        "link*/ata_link/link*/hw_sata_spd_limit",
    )
)


@dataclass(frozen=True)
class PcieLink:
    """The PCIe link of the PCI function behind an NVMe controller; ``None``: not exposed."""

    address: str
    current_speed: str | None
    current_width: str | None
    max_speed: str | None
    max_width: str | None


@dataclass(frozen=True)
class SataLink:
    """The SATA link of a libata port; ``max_speed`` is the port's hardware limit."""

    port: str
    current_speed: str | None
    max_speed: str | None


def read_attr(path: Path) -> str | None:
    """A sysfs attribute, stripped; None when absent, unreadable or empty."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return None
    return text or None


def _ancestors(disk: Path, sysfs_root: Path) -> Iterator[Path]:
    """The disk's device and the devices above it, up to *sysfs_root*."""
    device = disk / "device"
    start = device.resolve() if device.exists() else disk.resolve()
    root = sysfs_root.resolve()
    for path in (start, *start.parents):
        if path == root or not path.is_relative_to(root):
            return
        yield path


def _pci_ancestor(node: Path, sysfs_root: Path) -> Path | None:
    return next((p for p in _ancestors(node, sysfs_root) if _PCI_FUNCTION.match(p.name)), None)


def _pci_function(disk: Path, sysfs_root: Path) -> Path | None:
    found = _pci_ancestor(disk, sysfs_root)
    device = disk / "device"
    if found is not None or not device.is_dir():
        return found
    # native multipath: the disk's device is nvme-subsysN, which links to its controllers
    controllers = sorted(p for p in device.iterdir() if _NVME_CONTROLLER.match(p.name))
    return next((f for c in controllers if (f := _pci_ancestor(c, sysfs_root))), None)


def pcie_link(disk: Path, sysfs_root: Path) -> PcieLink | None:
    """The PCIe link of NVMe *disk* (its sysfs directory); None when no PCI function is found."""
    function = _pci_function(disk, sysfs_root)
    if function is None:
        return None
    return PcieLink(
        address=function.name,
        current_speed=read_attr(function / "current_link_speed"),
        current_width=read_attr(function / "current_link_width"),
        max_speed=read_attr(function / "max_link_speed"),
        max_width=read_attr(function / "max_link_width"),
    )


def sata_link(disk: Path, sysfs_root: Path) -> SataLink | None:
    """The SATA link of libata *disk* (its sysfs directory); None when it has no ``ataN`` port."""
    for path in _ancestors(disk, sysfs_root):
        match = _ATA_PORT.match(path.name)
        if match:
            # the port's host link shares its number: ata1/link1/ata_link/link1
            name = f"link{match.group(1)}"
            link = path / name / "ata_link" / name
            return SataLink(
                port=path.name,
                current_speed=read_attr(link / "sata_spd"),
                max_speed=read_attr(link / "hw_sata_spd_limit"),
            )
    return None
