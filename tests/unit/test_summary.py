"""Device summary: the golden QEMU NVMe controller, variants of its JSON, and fake sysfs trees."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import RunInfo
from pytest_ssd.device.identity import DeviceIdentity, identify, identify_block
from pytest_ssd.device.nvme import NvmeInfo, parse_id_ctrl, parse_id_ns
from pytest_ssd.device.summary import (
    NOT_EXPOSED,
    DeviceSummary,
    kelvin_to_celsius,
    summarize,
)
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.report.sections.general import environment
from pytest_ssd.report.summary import device_summary_html

GOLDEN = Path(__file__).parent.parent / "golden" / "nvme"
ENDPOINT = "devices/pci0000:00/0000:00:01.0/0000:01:00.0"
NVME_LINK = {
    "current_link_speed": "8.0 GT/s PCIe",
    "current_link_width": "4",
    "max_link_speed": "16.0 GT/s PCIe",
    "max_link_width": "4",
}
NVME_ROW_LABELS = (
    "NVMe version",
    "LBA format in use",
    "Warning composite temperature",
    "Critical composite temperature",
    "Power states",
    "Sanitize",
    "Format NVM",
)


def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text())
    return data


def nvme_info(ctrl: dict[str, Any] | None = None, ns: dict[str, Any] | None = None) -> NvmeInfo:
    return NvmeInfo(
        parse_id_ctrl(json.dumps(ctrl or golden("id-ctrl.json"))),
        parse_id_ns(json.dumps(ns or golden("id-ns.json"))),
    )


def build(root: Path, files: dict[str, str], links: dict[str, str]) -> Path:
    """Write sysfs attribute *files* and relative symlinks *links* (both relative to *root*)."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    for rel, target in links.items():
        link = root / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(root / target, link.parent))
    return root


def disk_files(disk: str, *, sectors: int = 4194304, rotational: int = 0) -> dict[str, str]:
    """What identify_block needs of a disk: its size and queue limits."""
    queue = {"logical_block_size": "512", "physical_block_size": "512", "scheduler": "[none]"}
    queue |= {"rotational": str(rotational), "discard_max_bytes": "0"}
    return {f"{disk}/size": str(sectors)} | {f"{disk}/queue/{k}": v for k, v in queue.items()}


def block_links(name: str, disk: str) -> dict[str, str]:
    return {f"block/{name}": disk, f"class/block/{name}": disk}


def nvme_tree(root: Path, *, ctrl: str, disk: str, link: dict[str, str]) -> Path:
    """An NVMe controller at *ctrl*, its namespace at *disk*, the PCI endpoint's *link* attrs."""
    files = disk_files(disk) | {f"{ENDPOINT}/{k}": v for k, v in link.items()}
    # the root port above the endpoint has a link too, faster and wider: never to be reported
    files |= {"devices/pci0000:00/0000:00:01.0/current_link_speed": "32.0 GT/s PCIe"}
    files |= {"devices/pci0000:00/0000:00:01.0/current_link_width": "16"}
    links = block_links("nvme0n1", disk) | {f"class/nvme/{ctrl.rsplit('/', 1)[1]}": ctrl}
    return build(root, files, links | {f"{disk}/device": ctrl})


def identify_nvme(root: Path, info: NvmeInfo | None) -> DeviceIdentity:
    return identify_block(
        Path("/dev/nvme0n1"), "nvme0n1", sysfs_root=root, query_nvme=lambda _: info or nvme_info()
    )


def identity_with(info: NvmeInfo | None) -> DeviceIdentity:
    """A 2 GiB NVMe namespace that sysfs knows nothing more about."""
    ctrl = info.controller if info else None
    return DeviceIdentity(
        path="/dev/nvme0n1",
        kind="block",
        kernel_name="nvme0n1",
        size_bytes=2 << 30,
        logical_block_size=512,
        physical_block_size=512,
        rotational=False,
        discard=True,
        model=ctrl.model if ctrl else "QEMU NVMe Ctrl",
        serial=ctrl.serial if ctrl else "GOLDEN0001",
        firmware=ctrl.firmware if ctrl else "7.2.22",
        transport="nvme",
        nvme=info,
    )


@pytest.fixture
def golden_summary(tmp_path: Path) -> DeviceSummary:
    ctrl = f"{ENDPOINT}/nvme/nvme0"
    root = nvme_tree(tmp_path / "sys", ctrl=ctrl, disk=f"{ctrl}/nvme0n1", link=NVME_LINK)
    return summarize(identify_nvme(root, nvme_info()), sysfs_root=root)


def test_golden_qemu_controller(golden_summary: DeviceSummary) -> None:
    s = golden_summary
    assert (s.model, s.serial, s.firmware) == ("QEMU NVMe Ctrl", "GOLDEN0001", "7.2.22")
    assert (s.interface, s.ssd, s.rotational) == ("NVMe", True, False)
    assert (s.capacity_bytes, s.logical_block_size, s.physical_block_size) == (2 << 30, 512, 512)
    nvme = s.nvme
    assert nvme is not None
    assert nvme.version == "1.4"
    assert nvme.vendor_id == 0x1B36
    assert len(nvme.lba_formats) == 8
    assert nvme.lba_format_in_use == 0
    assert [(f.data_size, f.metadata_size) for f in nvme.lba_formats[3:5]] == [(512, 64), (4096, 0)]
    assert (nvme.warning_temp_c, nvme.critical_temp_c) == (69.85, 99.85)
    (ps,) = nvme.power_states
    assert (ps.max_power_w, ps.non_operational, ps.entry_latency_us, ps.exit_latency_us) == (
        25.0,
        False,
        16,
        4,
    )
    assert not (nvme.sanitize_block_erase or nvme.sanitize_crypto_erase or nvme.sanitize_overwrite)
    assert not (nvme.format_all_namespaces or nvme.format_crypto_erase)
    assert nvme.volatile_write_cache  # vwc 7: bit 0 set


def test_golden_rows(golden_summary: DeviceSummary) -> None:
    rows = dict(golden_summary.rows())
    assert rows["What it is"] == "NVMe namespace nvme0n1"
    assert rows["Vendor"] == "PCI vendor ID 0x1b36"
    assert rows["Capacity"] == "2,147,483,648 bytes = 2.00 GiB = 2.15 GB"
    assert rows["Block size (logical / physical)"] == "512 B / 512 B"
    assert rows["Rotational"] == "no"
    assert rows["NVMe version"] == "1.4"
    assert rows["LBA format in use"] == (
        "#0: 512 B data + 0 B metadata, Best performance (8 formats)"
    )
    assert rows["Warning composite temperature"] == "69.85 °C"
    assert rows["Critical composite temperature"] == "99.85 °C"
    assert rows["Power states"] == "PS0 25.00 W"
    assert rows["Sanitize"] == "none (sanitize not supported)"
    assert rows["Format NVM"] == "per namespace; crypto erase not supported"
    assert rows["Volatile write cache"] == "present (VWC)"


def test_golden_sub_tables(golden_summary: DeviceSummary) -> None:
    nvme = golden_summary.nvme
    assert nvme is not None
    lbafs = nvme.lba_format_rows()
    assert lbafs[0] == ("#0", "512 B", "0 B", "0 (Best)", "in use")
    assert lbafs[7] == ("#7", "4096 B", "64 B", "0 (Best)", "")
    assert [row[4] for row in lbafs].count("in use") == 1
    assert nvme.power_state_rows() == [("PS0", "25.00 W", "no", "16", "4")]


def test_pcie_link_of_the_endpoint(golden_summary: DeviceSummary) -> None:
    pcie = golden_summary.pcie
    assert pcie is not None
    assert pcie.address == "0000:01:00.0"
    assert (pcie.current_speed, pcie.current_width) == ("8.0 GT/s PCIe", "4")
    assert (pcie.max_speed, pcie.max_width) == ("16.0 GT/s PCIe", "4")
    rows = dict(golden_summary.rows())
    assert rows["Link"] == "PCIe, PCI function 0000:01:00.0"
    assert rows["Link speed (current / max)"] == "8.0 GT/s PCIe / 16.0 GT/s PCIe"
    assert rows["Link width (current / max)"] == "x4 / x4"


def test_partition_takes_the_link_of_its_namespace(tmp_path: Path) -> None:
    ctrl = f"{ENDPOINT}/nvme/nvme0"
    disk = f"{ctrl}/nvme0n1"
    root = nvme_tree(tmp_path / "sys", ctrl=ctrl, disk=disk, link=NVME_LINK)
    part = f"{disk}/nvme0n1p1"
    build(root, {f"{part}/partition": "1", f"{part}/size": "2048"}, block_links("nvme0n1p1", part))
    ident = identify_block(
        Path("/dev/nvme0n1p1"), "nvme0n1p1", sysfs_root=root, query_nvme=lambda _: nvme_info()
    )
    s = summarize(ident, sysfs_root=root)
    assert s.description == "partition nvme0n1p1 of NVMe namespace nvme0n1"
    assert s.capacity_bytes == 2048 * 512
    assert s.pcie is not None and s.pcie.current_speed == "8.0 GT/s PCIe"


def test_pcie_link_attributes_absent(tmp_path: Path) -> None:
    ctrl = f"{ENDPOINT}/nvme/nvme0"
    root = nvme_tree(tmp_path / "sys", ctrl=ctrl, disk=f"{ctrl}/nvme0n1", link={})
    s = summarize(identify_nvme(root, None), sysfs_root=root)
    assert s.pcie is not None and s.pcie.address == "0000:01:00.0"
    assert (s.pcie.current_speed, s.pcie.current_width) == (None, None)  # not the root port's
    rows = dict(s.rows())
    assert rows["Link speed (current / max)"] == "not exposed / not exposed"
    assert rows["Link width (current / max)"] == "not exposed / not exposed"


def test_pcie_link_sentinels_read_as_not_reported(tmp_path: Path) -> None:
    # a controller on QEMU microvm's root bus: sysfs says "Unknown" and widths 0 / 255
    ctrl = f"{ENDPOINT}/nvme/nvme0"
    sentinels = {
        "current_link_speed": "Unknown",
        "max_link_speed": "Unknown",
        "current_link_width": "0",
        "max_link_width": "255",
    }
    root = nvme_tree(tmp_path / "sys", ctrl=ctrl, disk=f"{ctrl}/nvme0n1", link=sentinels)
    rows = dict(summarize(identify_nvme(root, None), sysfs_root=root).rows())
    assert rows["Link speed (current / max)"] == "not reported / not reported"
    assert rows["Link width (current / max)"] == "not reported / not reported"
    assert "x0" not in str(rows) and "x255" not in str(rows) and "Unknown" not in str(rows)


def test_pcie_link_through_native_multipath(tmp_path: Path) -> None:
    ctrl = f"{ENDPOINT}/nvme/nvme0"
    subsys = "devices/virtual/nvme-subsystem/nvme-subsys0"
    root = nvme_tree(tmp_path / "sys", ctrl=subsys, disk=f"{subsys}/nvme0n1", link=NVME_LINK)
    build(root, {}, {f"{subsys}/nvme0": ctrl, f"{ctrl}/device": ENDPOINT})
    s = summarize(identify_nvme(root, None), sysfs_root=root)
    assert s.pcie is not None
    assert (s.pcie.address, s.pcie.current_speed, s.pcie.max_width) == (
        "0000:01:00.0",
        "8.0 GT/s PCIe",
        "4",
    )


def test_nvme_over_fabrics_has_no_pcie_link(tmp_path: Path) -> None:
    ctrl = "devices/virtual/nvme-fabrics/ctl/nvme0"
    root = nvme_tree(tmp_path / "sys", ctrl=ctrl, disk=f"{ctrl}/nvme0n1", link=NVME_LINK)
    s = summarize(identify_nvme(root, None), sysfs_root=root)
    assert s.pcie is None
    rows = dict(s.rows())
    assert [rows[k] for k in ("Link", "Link speed (current / max)")] == [NOT_EXPOSED] * 2


def test_variant_json_scales_states_sanitize_and_unreported_temperatures(tmp_path: Path) -> None:
    ctrl = golden("id-ctrl.json")
    psd = ctrl["psds"][0]
    ctrl["psds"] = [
        {**psd, "max_power": 825, "flags": 0, "entry_lat": 0, "exit_lat": 0},
        {**psd, "max_power": 35000, "flags": 1, "entry_lat": 1500, "exit_lat": 2000},
        {**psd, "max_power": 50, "flags": 3, "entry_lat": 5000, "exit_lat": 45000},
    ]
    ctrl.update(npss=2, sanicap=0b111, fna=0b101, wctemp=0, cctemp=0, vwc=6)
    ns = golden("id-ns.json")
    ns["flbas"] = 0x14  # format 4; bit 4 says metadata at the end of the LBA
    s = summarize(identity_with(nvme_info(ctrl, ns)), sysfs_root=tmp_path)
    nvme = s.nvme
    assert nvme is not None
    assert [(p.max_power_w, p.non_operational) for p in nvme.power_states] == [
        (8.25, False),
        (3.5, False),
        (0.005, True),
    ]
    assert (nvme.warning_temp_c, nvme.critical_temp_c) == (None, None)
    assert nvme.sanitize_block_erase and nvme.sanitize_crypto_erase and nvme.sanitize_overwrite
    assert nvme.format_all_namespaces and nvme.format_crypto_erase
    assert not nvme.volatile_write_cache  # 6: flush bits set, bit 0 clear
    assert nvme.lba_format_in_use == 4
    rows = dict(s.rows())
    assert rows["Power states"] == "PS0 8.25 W, PS1 3.5000 W, PS2 0.0050 W (non-operational)"
    assert rows["Warning composite temperature"] == "not reported"
    assert rows["Critical composite temperature"] == "not reported"
    assert rows["Sanitize"] == "block erase, crypto erase, overwrite"
    assert rows["Format NVM"] == "applies to all namespaces; crypto erase supported"
    assert rows["Volatile write cache"] == "not present (VWC)"
    assert rows["LBA format in use"].startswith("#4: 4096 B data + 0 B metadata")
    assert nvme.power_state_rows()[2] == ("PS2", "0.0050 W", "yes", "5,000", "45,000")
    assert s.pcie is None  # nothing under tmp_path


def test_sanitize_bits_one_at_a_time() -> None:
    names = {1: "crypto erase", 2: "block erase", 4: "overwrite"}
    for bit, name in names.items():
        ctrl = golden("id-ctrl.json") | {"sanicap": bit}
        rows = dict(summarize(identity_with(nvme_info(ctrl))).rows())
        assert rows["Sanitize"] == name


@pytest.mark.parametrize(
    ("kelvin", "celsius"), [(343, 69.85), (373, 99.85), (273, -0.15), (0, None)]
)
def test_kelvin_to_celsius(kelvin: int, celsius: float | None) -> None:
    assert kelvin_to_celsius(kelvin) == celsius


def test_nvme_without_nvme_cli(tmp_path: Path) -> None:
    s = summarize(identity_with(None), sysfs_root=tmp_path)
    assert s.nvme is None
    assert "nvme-cli id-ctrl / id-ns unavailable" in s.description
    rows = dict(s.rows())
    assert [rows[label] for label in NVME_ROW_LABELS] == [NOT_EXPOSED] * len(NVME_ROW_LABELS)
    assert rows["Vendor"] == rows["Volatile write cache"] == NOT_EXPOSED
    assert rows["Model"] == "QEMU NVMe Ctrl"


SCSI_DEVICE = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
SAS_DEVICE = "devices/pci0000:00/0000:03:00.0/host2/port-2:0/end_device-2:0/target2:0:0/2:0:0:0"


def scsi_identity(
    root: Path, device: str, attrs: dict[str, str], *, rotational: int = 0
) -> DeviceIdentity:
    disk = f"{device}/block/sda"
    files = disk_files(disk, sectors=1953525168, rotational=rotational)
    files |= {f"{device}/{k}": v for k, v in attrs.items()}
    build(root, files, block_links("sda", disk) | {f"{disk}/device": device})
    return identify_block(Path("/dev/sda"), "sda", sysfs_root=root, query_nvme=None)


def test_sata_ssd_with_write_back_cache(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    attrs = {
        "vendor": "ATA     ",
        "model": "Samsung SSD 870 ",
        "rev": "2B6Q",
        "scsi_disk/0:0:0:0/cache_type": "write back",
    }
    link = "devices/pci0000:00/0000:00:1f.2/ata1/link1/ata_link/link1"
    build(root, {f"{link}/sata_spd": "3.0 Gbps", f"{link}/hw_sata_spd_limit": "6.0 Gbps"}, {})
    s = summarize(scsi_identity(root, SCSI_DEVICE, attrs), sysfs_root=root)
    assert (s.interface, s.ssd) == ("SATA", True)
    assert s.scsi is not None
    assert (s.scsi.vendor, s.scsi.model, s.scsi.revision) == ("ATA", "Samsung SSD 870", "2B6Q")
    assert s.scsi.cache_type == "write back"
    assert s.pcie is None
    rows = dict(s.rows())
    assert rows["What it is"] == "SATA disk sda"
    assert (rows["Vendor"], rows["Model"], rows["Firmware"]) == ("ATA", "Samsung SSD 870", "2B6Q")
    assert rows["Serial"] == NOT_EXPOSED
    assert rows["Volatile write cache"] == "write back"
    assert rows["Link"] == "SATA, port ata1"
    assert rows["Link speed (current / max)"] == "3.0 Gbps / 6.0 Gbps (port limit)"
    assert rows["Link width (current / max)"] == NOT_EXPOSED
    assert [rows[label] for label in NVME_ROW_LABELS] == [NOT_EXPOSED] * len(NVME_ROW_LABELS)
    assert rows["Capacity"] == "1,000,204,886,016 bytes = 931.51 GiB = 1 TB"


def test_sas_hard_disk_without_cache_type(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    attrs = {"vendor": "SEAGATE ", "model": "ST4000NM0023", "rev": "0003"}
    s = summarize(scsi_identity(root, SAS_DEVICE, attrs, rotational=1), sysfs_root=root)
    assert (s.interface, s.ssd, s.sata, s.pcie) == ("SCSI", False, None, None)
    rows = dict(s.rows())
    assert rows["What it is"] == "SCSI disk sda: rotational, not an SSD"
    assert rows["Rotational"] == "yes"
    assert rows["Volatile write cache"] == rows["Link"] == NOT_EXPOSED


def test_loop_device_from_fake_sysfs(tmp_path: Path) -> None:
    disk = "devices/virtual/block/loop3"
    files = disk_files(disk, sectors=131072) | {
        f"{disk}/loop/backing_file": "/srv/images/dut.img",
        f"{disk}/loop/dio": "0",
    }
    root = build(tmp_path / "sys", files, block_links("loop3", disk))
    ident = identify_block(Path("/dev/loop3"), "loop3", sysfs_root=root, query_nvme=None)
    s = summarize(ident, sysfs_root=root)
    assert (s.interface, s.ssd, s.backing_file, s.direct_io) == (
        "loop",
        False,
        "/srv/images/dut.img",
        False,
    )
    rows = dict(s.rows())
    assert rows["What it is"].startswith(
        "loop device loop3 backed by /srv/images/dut.img (direct I/O off): not an SSD"
    )
    for label in ("Vendor", "Model", "Serial", "Link", "Volatile write cache", *NVME_ROW_LABELS):
        assert rows[label] == NOT_EXPOSED, label
    # the kernel marks loop devices rotational by default: that describes no medium
    assert rows["Rotational"] == "not applicable (a loop has no medium of its own)"


def test_real_loop_device(loop_device: Callable[..., Path], tmp_path: Path) -> None:
    dev = loop_device(64)
    s = summarize(identify(dev, LOCAL))
    assert (s.interface, s.ssd, s.direct_io, s.nvme, s.pcie) == ("loop", False, True, None, None)
    assert s.backing_file == str(tmp_path / "0-backing.img")
    assert f"backed by {tmp_path / '0-backing.img'} (direct I/O on): not an SSD" in s.description


def test_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "dut.bin"
    with target.open("wb") as fh:
        fh.truncate(3 << 20)
    s = summarize(identify(target, LOCAL))
    assert (s.interface, s.ssd, s.kernel_name, s.capacity_bytes) == ("file", False, None, 3 << 20)
    assert s.description.startswith(f"regular file {target}: not an SSD")
    assert dict(s.rows())["Rotational"] == "not applicable (a file has no medium of its own)"


def test_as_dict_is_json(golden_summary: DeviceSummary) -> None:
    data = json.loads(json.dumps(golden_summary.as_dict()))
    assert data["capacity_gib"] == 2.0 and data["capacity_decimal"] == "2.15 GB"
    assert data["nvme"]["warning_temp_c"] == 69.85
    assert data["nvme"]["power_states"][0]["max_power_w"] == 25.0
    assert len(data["nvme"]["lba_formats"]) == 8
    assert data["pcie"]["current_width"] == "4"
    assert data["scsi"] is None and data["sata"] is None


def test_html_has_the_values(golden_summary: DeviceSummary) -> None:
    page = device_summary_html([("nvme0n1", golden_summary)])
    assert page.startswith("<h2>Device summary</h2>")
    for text in (
        "<h3>nvme0n1</h3>",
        "<td>QEMU NVMe Ctrl</td>",
        "<td>GOLDEN0001</td>",
        "<td>69.85 °C</td>",
        "<td>99.85 °C</td>",
        "<td>8.0 GT/s PCIe / 16.0 GT/s PCIe</td>",
        "<h4>LBA formats</h4>",
        "<td>#0</td><td>512 B</td><td>0 B</td><td>0 (Best)</td><td>in use</td>",
        "<h4>Power states</h4>",
        "<td>PS0</td><td>25.00 W</td><td>no</td><td>16</td><td>4</td>",
    ):
        assert text in page, text
    assert page.count("<td>in use</td>") == 1
    # the summary's rows, then the LBA formats' header and 8 rows, the power states' header and row
    assert page.count("<tr>") == len(golden_summary.rows()) + 1 + 8 + 1 + 1


def test_html_escapes_device_strings(golden_summary: DeviceSummary) -> None:
    evil = dataclasses.replace(golden_summary, model='<script>alert("x")</script>', serial="A&B")
    page = device_summary_html([("dut<1>", evil)])
    assert "<script>" not in page
    assert "<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>" in page
    assert "<td>A&amp;B</td>" in page
    assert "<h3>dut&lt;1&gt;</h3>" in page


def test_html_without_nvme_has_no_sub_tables(tmp_path: Path) -> None:
    target = tmp_path / "dut.bin"
    target.write_bytes(b"\0" * 4096)
    page = device_summary_html([("file", summarize(identify(target, LOCAL)))])
    assert '<th scope="row">What it is</th>' in page
    assert "LBA formats" not in page and "Power states</h4>" not in page
    assert device_summary_html([]) == ""


def test_the_command_is_shown_as_a_shell_would_take_it_back() -> None:
    argv = ["pytest", "suites/csd", "-k", "qd1 and r70", "--dut=/dev/nvme0n1"]
    run = RunInfo("r1", "2026", None, True, {}, "/tmp/r1", {"argv": argv}, ())
    body = environment([run]).body
    assert "pytest suites/csd -k &#x27;qd1 and r70&#x27; --dut=/dev/nvme0n1" in body
