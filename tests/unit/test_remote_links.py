"""A test host's sysfs as the device summary reads it: copied here with the same links."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.device.identity import identify
from pytest_ssd.device.link import pcie_link, sata_link
from pytest_ssd.device.summary import READS, summarize
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.machine.snapshot import SnapshotError, parse, take, take_all

PCI = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
# what the script prints for an NVMe namespace behind a PCIe x4 link (a host's real layout)
NVME = f"""@@ssd:node {PCI}/nvme/nvme0/nvme0n1
@@ssd:disk {PCI}/nvme/nvme0/nvme0n1
@@ssd:device {PCI}/nvme/nvme0
{PCI}/current_link_speed:8.0 GT/s PCIe
{PCI}/current_link_width:4
{PCI}/max_link_speed:16.0 GT/s PCIe
{PCI}/max_link_width:4
/sys/devices/pci0000:00/0000:00:01.0/current_link_speed:16.0 GT/s PCIe
"""
ATA = "/sys/devices/pci0000:00/0000:00:17.0/ata3"
SATA = f"""@@ssd:node {ATA}/host2/target2:0:0/2:0:0:0/block/sda
@@ssd:disk {ATA}/host2/target2:0:0/2:0:0:0/block/sda
@@ssd:device {ATA}/host2/target2:0:0/2:0:0:0
{ATA}/link3/ata_link/link3/sata_spd:6.0 Gbps
{ATA}/link3/ata_link/link3/hw_sata_spd_limit:6.0 Gbps
{ATA}/host2/target2:0:0/2:0:0:0/vendor:ATA
{ATA}/host2/target2:0:0/2:0:0:0/scsi_disk/2:0:0:0/cache_type:write back
"""


def mirror(text: str, root: Path, name: str) -> Path:
    return parse(text, READS, root, name).sysfs


def test_an_nvme_namespace_keeps_its_pcie_link(tmp_path: Path) -> None:
    sysfs = mirror(NVME, tmp_path, "nvme0n1")
    disk = (sysfs / "class" / "block" / "nvme0n1").resolve()
    link = pcie_link(disk, sysfs)
    assert link is not None and link.address == "0000:01:00.0"
    assert (link.current_speed, link.current_width) == ("8.0 GT/s PCIe", "4")
    assert (link.max_speed, link.max_width) == ("16.0 GT/s PCIe", "4")


def test_a_sata_disk_keeps_its_port_link_and_cache(tmp_path: Path) -> None:
    sysfs = mirror(SATA, tmp_path, "sda")
    disk = (sysfs / "class" / "block" / "sda").resolve()
    link = sata_link(disk, sysfs)
    assert link is not None and (link.port, link.current_speed) == ("ata3", "6.0 Gbps")
    cache = disk / "device" / "scsi_disk" / "2:0:0:0" / "cache_type"
    assert cache.read_text() == "write back\n"


@pytest.mark.parametrize("path", ["/etc/passwd", "/sys/../etc"])
def test_a_path_outside_sys_is_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(SnapshotError, match="the host printed an odd path"):
        mirror(f"@@ssd:node {path}/x\n", tmp_path, "x")


def test_this_machines_disk_summarizes_the_same_from_the_copy(tmp_path: Path) -> None:
    # the script really runs (here, as on a host) against this machine's own sysfs
    disks = [
        p.name for p in Path("/sys/block").iterdir() if not p.name.startswith(("loop", "zram"))
    ]
    if not disks:
        pytest.skip("this machine has no disk but loop and zram devices")
    identity = identify(Path("/dev") / disks[0], LOCAL)
    copied = summarize(identity, sysfs_root=take(LOCAL, READS, tmp_path, device=disks[0]).sysfs)
    assert copied == summarize(identity)


@pytest.mark.parametrize("name", ["..", ".", "-x", "a b", "sda;true"])
def test_a_name_that_is_no_block_devices_is_refused_before_the_host_is_asked(
    tmp_path: Path, name: str
) -> None:
    # ".." passed before: /sys/class/block/.. is /sys/class, read as if a device's folder
    with pytest.raises(SnapshotError, match="not a block device name"):
        take_all(LOCAL, READS, tmp_path, devices=[name])
    assert not any(tmp_path.iterdir()), "nothing asked, nothing copied"
