"""Device identity: real loop devices and files, and a fake sysfs built from a real NVMe's."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_ssd.device.identity import (
    DeviceIdentity,
    binary_size,
    decimal_size,
    identify,
    identify_block,
    selected_scheduler,
)
from pytest_ssd.device.nvme import NvmeInfo, parse_id_ctrl, parse_id_ns
from pytest_ssd.errors import DeviceError, ToolError
from pytest_ssd.machine.machine import LOCAL

GOLDEN = Path(__file__).parent.parent / "golden" / "nvme"
NVME_DEV = Path("/dev/nvme0n1")
NVME_SECTORS = 4194304  # 2 GiB, as id-ns nsze with 512-byte LBAs
PARTITION_SECTORS = 2048


def golden_info() -> NvmeInfo:
    return NvmeInfo(
        parse_id_ctrl((GOLDEN / "id-ctrl.json").read_text()),
        parse_id_ns((GOLDEN / "id-ns.json").read_text()),
    )


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))


@pytest.fixture
def fake_sysfs(tmp_path: Path) -> Path:
    """A sysfs tree laid out as Linux 6.1 shows one QEMU NVMe namespace with one partition."""
    root = tmp_path / "sys"
    ctrl = root / "devices" / "pci0000:00" / "0000:00:04.0" / "nvme" / "nvme0"
    disk = ctrl / "nvme0n1"
    (disk / "queue").mkdir(parents=True)
    for attr, golden in (("model", "model"), ("serial", "serial"), ("firmware_rev", "firmware")):
        (ctrl / attr).write_text((GOLDEN / f"sysfs-{golden}.txt").read_text())
    for line in (GOLDEN / "sysfs-queue.txt").read_text().splitlines():
        key, value = line.split("=", 1)
        (disk / "queue" / key).write_text(value + "\n")
    (disk / "size").write_text(f"{NVME_SECTORS}\n")
    (disk / "nsid").write_text("1\n")
    _link(disk / "device", ctrl)
    part = disk / "nvme0n1p1"
    part.mkdir()
    (part / "partition").write_text("1\n")
    (part / "size").write_text(f"{PARTITION_SECTORS}\n")
    _link(root / "block" / "nvme0n1", disk)
    _link(root / "class" / "block" / "nvme0n1", disk)
    _link(root / "class" / "block" / "nvme0n1p1", part)
    _link(root / "dev" / "block" / "259:0", disk)
    return root


class FakeQuery:
    """Stands in for nvme.query: returns the golden info, or raises what it is given."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.devices: list[Path] = []

    def __call__(self, device: Path) -> NvmeInfo:
        self.devices.append(device)
        if self.error is not None:
            raise self.error
        return golden_info()


def test_nvme_namespace_from_fake_sysfs(fake_sysfs: Path) -> None:
    query = FakeQuery()
    ident = identify_block(NVME_DEV, "nvme0n1", sysfs_root=fake_sysfs, query_nvme=query)
    assert query.devices == [NVME_DEV]
    assert (ident.kind, ident.kernel_name, ident.transport) == ("block", "nvme0n1", "nvme")
    assert ident.size_bytes == 2 << 30
    assert (ident.logical_block_size, ident.physical_block_size) == (512, 512)
    assert ident.rotational is False
    assert ident.discard is True
    assert ident.scheduler == "none"
    assert (ident.model, ident.serial, ident.firmware) == ("QEMU NVMe Ctrl", "GOLDEN0001", "7.2.22")
    assert ident.nvme == golden_info()
    assert (ident.backing_file, ident.direct_io) == (None, None)
    assert ident.label == "QEMU NVMe Ctrl 2.15 GB fw 7.2.22"
    assert ident.confirm_token == "GOLDEN0001"
    assert (ident.nsid, ident.partition) == (1, None)


def test_nvme_cli_failure_falls_back_to_sysfs(fake_sysfs: Path) -> None:
    query = FakeQuery(ToolError("nvme not found on PATH: apt-get install nvme-cli"))
    ident = identify_block(NVME_DEV, "nvme0n1", sysfs_root=fake_sysfs, query_nvme=query)
    assert query.devices == [NVME_DEV]
    assert ident.nvme is None
    # sysfs pads like id-ctrl does
    assert (ident.model, ident.serial, ident.firmware) == ("QEMU NVMe Ctrl", "GOLDEN0001", "7.2.22")
    assert ident.confirm_token == "GOLDEN0001"


def test_nvme_prefers_id_ctrl_over_sysfs(fake_sysfs: Path) -> None:
    serial = fake_sysfs / "block" / "nvme0n1" / "device" / "serial"
    serial.write_text("FROM-SYSFS\n")
    with_nvme = identify_block(NVME_DEV, "nvme0n1", sysfs_root=fake_sysfs, query_nvme=FakeQuery())
    without = identify_block(NVME_DEV, "nvme0n1", sysfs_root=fake_sysfs, query_nvme=None)
    assert with_nvme.serial == "GOLDEN0001"
    assert without.serial == "FROM-SYSFS"


def test_other_errors_of_nvme_query_propagate(fake_sysfs: Path) -> None:
    with pytest.raises(RuntimeError, match="bug"):
        identify_block(
            NVME_DEV, "nvme0n1", sysfs_root=fake_sysfs, query_nvme=FakeQuery(RuntimeError("bug"))
        )


def test_partition_takes_attributes_from_its_disk(fake_sysfs: Path) -> None:
    part = Path("/dev/nvme0n1p1")
    ident = identify_block(part, "nvme0n1p1", sysfs_root=fake_sysfs, query_nvme=None)
    assert ident.kernel_name == "nvme0n1p1"
    assert ident.size_bytes == PARTITION_SECTORS * 512
    assert ident.transport == "nvme"
    assert ident.model == "QEMU NVMe Ctrl"
    assert ident.discard and ident.scheduler == "none"
    assert ident.confirm_token == "GOLDEN0001"
    assert (ident.nsid, ident.partition) == (1, 1), "its disk's namespace, its own number"


def test_identify_matches_by_device_number(fake_sysfs: Path, tmp_path: Path) -> None:
    node = tmp_path / "renamed-node"
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(259, 0))
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    ident = identify(node, LOCAL, sysfs_root=fake_sysfs, query_nvme=FakeQuery())
    assert ident.path == str(node)
    assert ident.kernel_name == "nvme0n1"
    assert ident.serial == "GOLDEN0001"


def test_block_device_unknown_to_sysfs(fake_sysfs: Path, tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match="nvme9n1: not found under"):
        identify_block(Path("/dev/nvme9n1"), "nvme9n1", sysfs_root=fake_sysfs, query_nvme=None)
    node = tmp_path / "stray"
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(259, 9))
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    with pytest.raises(DeviceError, match="259:9"):
        identify(node, LOCAL, sysfs_root=fake_sysfs)


def test_missing_size_attribute_is_named(fake_sysfs: Path) -> None:
    size = fake_sysfs / "block" / "nvme0n1" / "size"
    size.unlink()
    with pytest.raises(DeviceError, match=r"nvme0n1/size is missing"):
        identify_block(NVME_DEV, "nvme0n1", sysfs_root=fake_sysfs, query_nvme=None)


def test_as_dict_and_summary(fake_sysfs: Path) -> None:
    ident = identify_block(NVME_DEV, "nvme0n1", sysfs_root=fake_sysfs, query_nvme=FakeQuery())
    data = json.loads(json.dumps(ident.as_dict()))
    assert data["serial"] == "GOLDEN0001"
    assert data["nvme"]["namespace"]["nsze"] == NVME_SECTORS
    assert data["label"] == ident.label
    summary = ident.summary()
    assert "\n" not in summary
    for part in (
        "/dev/nvme0n1",
        "QEMU NVMe Ctrl",
        "GOLDEN0001",
        "2.00 GiB",
        "2.15 GB",
        "512/512",
        "nvme",
    ):
        assert part in summary


def _every_field_set(value: object) -> None:
    """No field of *value* (nor of the dataclasses in it) is empty, None or its default."""
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        found = getattr(value, f.name)
        assert found not in (None, (), "", f.default), f"{type(value).__name__}.{f.name}"
        for inner in found if isinstance(found, tuple) else (found,):
            if dataclasses.is_dataclass(inner):
                _every_field_set(inner)


def test_identity_round_trips_as_plain_data() -> None:
    """What xdist workers get of the controller's identification: plain data, no pickle."""
    info = golden_info()
    info = dataclasses.replace(
        info,
        controller=dataclasses.replace(
            info.controller, format_all_namespaces=True, vwc=1, volatile_write_cache=True
        ),
        namespace=dataclasses.replace(
            info.namespace, lba_format_index=1, indirection_unit_bytes=16384
        ),
    )
    ident = DeviceIdentity(
        path="/dev/nvme0n1",
        kind="block",
        kernel_name="nvme0n1",
        size_bytes=2 << 30,
        logical_block_size=4096,
        physical_block_size=8192,
        rotational=True,
        discard=True,
        model="QEMU NVMe Ctrl",
        serial="GOLDEN0001",
        firmware="8.2.2",
        transport="nvme",
        backing_file="/srv/disk.img",
        backing_inode="2049:131",
        direct_io=True,
        scheduler="mq-deadline",
        nvme=info,
        nsid=2,
        partition=1,
        wwn="eui.0123456789abcdef",
        by_id=("/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_GOLDEN0001",),
        controller="nvme0",
    )
    _every_field_set(ident)
    plain = json.loads(json.dumps(ident.as_dict()))
    assert DeviceIdentity.from_dict(plain) == ident
    assert DeviceIdentity.from_dict(plain).as_dict() == ident.as_dict()  # compare=False ones too
    assert DeviceIdentity.from_dict(ident.as_dict()) == ident
    without = {**plain, "nvme": None}
    assert DeviceIdentity.from_dict(without) == dataclasses.replace(ident, nvme=None)


def test_real_direct_io_loop_device(loop_device: Callable[..., Path], tmp_path: Path) -> None:
    dev = loop_device(64)
    link = tmp_path / "by-id-link"
    link.symlink_to(dev)
    ident = identify(link, LOCAL)
    assert ident.path == str(link)
    assert (ident.kind, ident.kernel_name, ident.transport) == ("block", dev.name, "loop")
    assert ident.size_bytes == 64 << 20
    assert (ident.logical_block_size, ident.physical_block_size) == (512, 512)
    assert ident.backing_file == str(tmp_path / "0-backing.img")
    # the backing file itself, as the loop holds it (another file at its path is another)
    held = (tmp_path / "0-backing.img").stat()
    assert ident.backing_inode == f"{held.st_dev}:{held.st_ino}"
    assert ident.direct_io is True
    assert ident.discard is True
    assert (ident.model, ident.serial, ident.firmware, ident.nvme) == (None, None, None, None)
    assert ident.scheduler is not None
    assert ident.confirm_token == str(link)
    assert ident.label == f"{dev.name} (64.0 MiB loop on {tmp_path / '0-backing.img'})"


def test_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "test.bin"
    with target.open("wb") as fh:
        fh.truncate(3 << 20)
    ident = identify(target, LOCAL)
    assert (ident.kind, ident.kernel_name, ident.transport) == ("file", None, "file")
    assert ident.size_bytes == 3 << 20
    assert ident.logical_block_size == 512
    assert ident.physical_block_size == os.statvfs(target).f_bsize
    assert ident.rotational is None and ident.discard is True
    assert ident.confirm_token == str(target)
    assert ident.label == f"file {target} (3.0 MiB)"


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(DeviceError, match=re.escape(f"{missing} does not exist")):
        identify(missing, LOCAL)


def test_directory_is_refused(tmp_path: Path) -> None:
    message = f"{tmp_path} is neither a block device nor a regular file"
    with pytest.raises(DeviceError, match=re.escape(message)):
        identify(tmp_path, LOCAL)


def test_character_device_is_refused() -> None:
    with pytest.raises(
        DeviceError, match=r"^/dev/null is neither a block device nor a regular file$"
    ):
        identify(Path("/dev/null"), LOCAL)


def test_nvme_controller_node_gets_a_hint(tmp_path: Path) -> None:
    node = tmp_path / "nvme0"
    try:
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(240, 0))
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    with pytest.raises(DeviceError, match=re.escape(f"name a namespace such as {node}n1")):
        identify(node, LOCAL)


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("[none] mq-deadline kyber bfq", "none"),
        ("mq-deadline [bfq]", "bfq"),
        ("none", "none"),
        ("a b", None),
        (None, None),
    ],
)
def test_selected_scheduler(text: str | None, selected: str | None) -> None:
    assert selected_scheduler(text) == selected


@pytest.mark.parametrize(
    ("n", "binary", "decimal"),
    [
        (1 << 30, "1.0 GiB", "1.07 GB"),
        (960 * 10**9, "894.1 GiB", "960 GB"),
        (1920 * 10**9, "1.7 TiB", "1.92 TB"),
        (100, "100 B", "100 B"),
    ],
)
def test_sizes(n: int, binary: str, decimal: str) -> None:
    assert (binary_size(n), decimal_size(n)) == (binary, decimal)
