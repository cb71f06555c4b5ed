"""Who the device under test is: size, block sizes, model, serial, transport.

A block device is matched to its sysfs node by device number
(``/sys/dev/block/MAJ:MIN``), so symlinks such as ``/dev/disk/by-id/...`` work.
Attributes are read from files under *sysfs_root*, never through udev: without
udevd there is no ID_MODEL or ID_SERIAL, and tests can point *sysfs_root* at a
fake tree.  A partition takes model, serial and queue limits from its disk.

Any machine's device is identified the same way (:func:`identify_on`): the files
:func:`identify_block` reads are those it declares (:data:`READS`); the machine gives
the ``/sys`` to read them from (:meth:`~pytest_ssd.machine.machine.Machine.sysfs`:
this machine's own, a test host's copied here in one command) and NVMe devices are
asked ``nvme id-ctrl`` and ``id-ns`` there.  The identity names the device by its
path on its machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import re
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.device import nvme
from pytest_ssd.device.nvme import NvmeInfo
from pytest_ssd.errors import DeviceError, SsdError, ToolError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.snapshot import Reads, SnapshotError

SYSFS = Path("/sys")
SECTOR = 512
NvmeQuery = Callable[[Path], NvmeInfo]


_SCSI_HOST = re.compile(r"^host\d+$")
_TRANSPORT_PREFIXES = (("nvme", "nvme"), ("loop", "loop"), ("mmcblk", "mmc"), ("vd", "virtio"))
#: what :func:`identify_block` reads of a device's sysfs (a test host's is copied from it)
READS = Reads(
    node=("size", "partition"),
    disk=(
        "queue/logical_block_size",
        "queue/physical_block_size",
        "queue/rotational",
        "queue/discard_max_bytes",
        "queue/scheduler",
        "device/model",
        "device/serial",
        "device/firmware_rev",
        "device/rev",
        "serial",
        "loop/backing_file",
        "loop/dio",
        "nsid",
    ),
)


@dataclass(frozen=True)
class DeviceIdentity:
    """What is known about one device under test (a block device or a regular file)."""

    path: str
    kind: str
    kernel_name: str | None
    size_bytes: int
    logical_block_size: int
    physical_block_size: int
    rotational: bool | None
    discard: bool
    model: str | None
    serial: str | None
    firmware: str | None
    transport: str
    backing_file: str | None = None
    #: the file's device and inode numbers (a regular file's, a loop device's backing file's,
    #: as the kernel holds them): a file replaced at the same path is another drive. Read on
    #: this machine only (a test host's sysfs copy cannot hold it), so an identity read here
    #: equals one read from a copy; a resume compares it where the run recorded it
    backing_inode: str | None = field(default=None, compare=False)
    direct_io: bool | None = None
    scheduler: str | None = None
    nvme: NvmeInfo | None = None
    #: an NVMe namespace's id (sysfs ``nsid``): one controller's namespaces share its serial
    nsid: int | None = None
    #: a partition's number: it carries its disk's serial
    partition: int | None = None
    #: what udev adds (:mod:`.udev.info`, read once when the session opens the device): the
    #: World Wide Name, the ``/dev/disk/by-id`` links (none without udevd), the controller
    #: the device hangs off (``nvme0``); descriptive only: never what names or pins the device
    wwn: str | None = field(default=None, compare=False)
    by_id: tuple[str, ...] = field(default=(), compare=False)
    controller: str | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """A short human name: model, size and firmware, or what the loop or file is."""
        size = binary_size(self.size_bytes)
        if self.kind == "file":
            return f"file {self.path} ({size})"
        if self.transport == "loop":
            backing = f" on {self.backing_file}" if self.backing_file else ""
            return f"{self.kernel_name} ({size} loop{backing})"
        if self.model:
            firmware = f" fw {self.firmware}" if self.firmware else ""
            return f"{self.model} {decimal_size(self.size_bytes)}{firmware}"
        return f"{self.kernel_name} ({size} {self.transport})"

    @property
    def confirm_token(self) -> str:
        """What ``--ssd-confirm`` must say before this device is written: serial, else path."""
        return self.serial or self.path

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["nvme"] = self.nvme.as_dict() if self.nvme else None
        fields["label"] = self.label
        return fields

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceIdentity:
        """The identity :meth:`as_dict` gave (its ``label`` is computed, not read)."""
        given = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        nvme_info = data.get("nvme")
        nvme = NvmeInfo.from_dict(nvme_info) if nvme_info else None
        return cls(**{**given, "nvme": nvme, "by_id": tuple(data.get("by_id", ()))})

    def summary(self) -> str:
        """One line: path, model, serial, size, LBA sizes and transport."""
        return (
            f"{self.path}: {self.model or 'unknown model'}, serial {self.serial or 'unknown'}, "
            f"{self.size_bytes / 2**30:,.2f} GiB ({self.size_bytes / 1e9:,.2f} GB), "
            f"LBA {self.logical_block_size}/{self.physical_block_size} B, {self.transport}"
        )


def binary_size(n: int) -> str:
    """'1.0 GiB', '64.0 MiB'."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def decimal_size(n: int) -> str:
    """'960 GB', '2.15 GB', '1.92 TB': how drives are sold."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def identify(
    path: Path, machine: Machine, *, sysfs_root: Path = SYSFS, query_nvme: NvmeQuery | None = None
) -> DeviceIdentity:
    """Identify the block device or regular file at *path*; :class:`DeviceError` otherwise."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise DeviceError(f"device under test {path} does not exist") from None
    except OSError as exc:
        raise DeviceError(f"cannot stat device under test {path}: {exc.strerror}") from None
    if stat.S_ISREG(st.st_mode):
        return identify_file(path, st)
    if not stat.S_ISBLK(st.st_mode):
        raise DeviceError(f"{path} is neither a block device nor a regular file{_hint(path, st)}")
    name = kernel_name(st.st_rdev, sysfs_root)
    query = query_nvme or (lambda device: nvme.query(device, None, machine))
    return identify_block(path, name, sysfs_root=sysfs_root, query_nvme=query)


def _hint(path: Path, st: os.stat_result) -> str:
    if stat.S_ISCHR(st.st_mode) and re.fullmatch(r"nvme\d+", path.name):
        return f" (an NVMe controller: name a namespace such as {path}n1)"
    return ""


def kernel_name(rdev: int, sysfs_root: Path = SYSFS) -> str:
    """The kernel name ("nvme0n1", "loop3") of block device number *rdev*."""
    link = sysfs_root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}"
    try:
        return link.readlink().name
    except OSError:
        raise DeviceError(f"block device {os.major(rdev)}:{os.minor(rdev)}: no {link}") from None


def identify_file(path: Path, st: os.stat_result | None = None) -> DeviceIdentity:
    """A regular file: its size, the file system's block size; discard is a punched hole."""
    st = st or path.stat()
    return DeviceIdentity(
        path=str(path),
        kind="file",
        kernel_name=None,
        size_bytes=st.st_size,
        logical_block_size=SECTOR,
        physical_block_size=os.statvfs(path).f_bsize,
        rotational=None,
        discard=True,
        model=None,
        serial=None,
        firmware=None,
        transport="file",
        backing_inode=f"{st.st_dev}:{st.st_ino}",
    )


def identify_block(
    path: Path,
    kernel_name: str,
    *,
    sysfs_root: Path = SYSFS,
    query_nvme: NvmeQuery | None,
) -> DeviceIdentity:
    """Identify block device *kernel_name* (opened as *path*) from the sysfs tree at *sysfs_root*.

    NVMe devices are also asked for id-ctrl and id-ns through *query_nvme*; when
    that fails with :class:`ToolError` the identity has ``nvme=None``.
    """
    node = _block_node(sysfs_root, kernel_name)
    disk = node.parent if (node / "partition").exists() else node
    queue = disk / "queue"
    transport = _transport(disk)
    info = _query(query_nvme, path) if transport == "nvme" else None
    controller = info.controller if info else None
    return DeviceIdentity(
        path=str(path),
        kind="block",
        kernel_name=kernel_name,
        size_bytes=_int_attr(node / "size") * SECTOR,
        logical_block_size=_int_attr(queue / "logical_block_size"),
        physical_block_size=_int_attr(queue / "physical_block_size"),
        rotational=_flag(queue / "rotational"),
        discard=_int_attr(queue / "discard_max_bytes", default=0) > 0,
        model=controller.model if controller else _attr(disk / "device" / "model"),
        serial=controller.serial if controller else _serial(disk),
        firmware=controller.firmware if controller else _firmware(disk),
        transport=transport,
        backing_file=_attr(disk / "loop" / "backing_file"),
        backing_inode=_loop_inode(path) if transport == "loop" and sysfs_root == SYSFS else None,
        direct_io=_flag(disk / "loop" / "dio"),
        scheduler=selected_scheduler(_attr(queue / "scheduler")),
        nvme=info,
        nsid=_optional_int(disk / "nsid") if transport == "nvme" else None,
        partition=_optional_int(node / "partition") if disk != node else None,
    )


def identify_on(
    machine: Machine, path: str, kernel_name: str, artifacts: Path | None = None
) -> DeviceIdentity:
    """Identify block device *kernel_name* of *machine*, opened there as *path*."""
    with contextlib.ExitStack() as stack:
        roots = sysfs_roots(machine, [kernel_name], stack, strict=True)
        if kernel_name not in roots:
            on = f"{machine.where}: " if machine.where else ""
            raise DeviceError(f"{on}block device {kernel_name} is not in its /sys")
        return identify_block(
            Path(path),
            kernel_name,
            sysfs_root=roots[kernel_name],
            query_nvme=lambda device: nvme.query(device, artifacts, machine),
        )


def sysfs_roots(
    machine: Machine,
    names: list[str],
    stack: contextlib.ExitStack[bool | None],
    *,
    strict: bool = False,
) -> dict[str, Path]:
    """Where what identifies each block device of *names* on *machine* is read while *stack*
    lasts: its /sys (a test host's copied, in one command); a name it does not have is left
    out, and everything when the copy fails (unless *strict*: :class:`DeviceError`)."""
    try:
        return stack.enter_context(machine.sysfs(READS, names))
    except SnapshotError as exc:
        if strict:
            raise DeviceError(str(exc)) from None
        return {}


def identify_from(
    machine: Machine,
    paths: dict[str, str],
    roots: dict[str, Path],
    artifacts: Path | None = None,
) -> dict[str, DeviceIdentity]:
    """Identify the block devices of *machine* (*paths*: each one's path there -> kernel
    name) from its sysfs (*roots*: :func:`sysfs_roots`); those that could not be are left
    out (:func:`identify_on` tells why)."""
    found: dict[str, DeviceIdentity] = {}
    for path, name in paths.items():
        if name in roots:
            with contextlib.suppress(SsdError):
                found[path] = identify_block(
                    Path(path),
                    name,
                    sysfs_root=roots[name],
                    query_nvme=lambda device: nvme.query(device, artifacts, machine),
                )
    return found


#: LOOP_GET_STATUS64 (linux/loop.h): its struct loop_info64 (232 bytes) begins with the
#: backing file's device and inode numbers (two __u64)
_LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64_SIZE = 232


def _loop_inode(path: Path) -> str | None:
    """The device and inode numbers of loop device *path*'s backing file (None: unknown).

    Read from the loop itself, not from the backing file's path: a file deleted and
    replaced at that path is not the one the loop device reads.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = fcntl.ioctl(fd, _LOOP_GET_STATUS64, bytes(_LOOP_INFO64_SIZE))
    except OSError:  # not a loop device after all, or no file attached
        return None
    finally:
        os.close(fd)
    device, inode = struct.unpack_from("=QQ", info)
    return f"{device}:{inode}"


def _block_node(sysfs_root: Path, name: str) -> Path:
    """The device's sysfs directory; /sys/class/block lists partitions, /sys/block only disks."""
    for candidate in (sysfs_root / "class" / "block" / name, sysfs_root / "block" / name):
        if candidate.is_dir():
            return candidate.resolve()
    raise DeviceError(f"block device {name}: not found under {sysfs_root}")


def _transport(disk: Path) -> str:
    for prefix, transport in _TRANSPORT_PREFIXES:
        if disk.name.startswith(prefix):
            return transport
    parts = disk.parts
    if disk.name.startswith(("sd", "sr")) or any(_SCSI_HOST.match(p) for p in parts):
        return "scsi"
    if any(p.startswith("virtio") for p in parts):
        return "virtio"
    return "other"


def _query(query_nvme: NvmeQuery | None, path: Path) -> NvmeInfo | None:
    if query_nvme is None:
        return None
    try:
        return query_nvme(path)
    except ToolError:
        # identity does not depend on nvme-cli; the caller reports its absence
        return None


def _attr(path: Path) -> str | None:
    """A sysfs attribute, stripped; None when absent, unreadable or empty."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return None
    return text or None


def _int_attr(path: Path, default: int | None = None) -> int:
    text = _attr(path)
    if text is not None and text.isdecimal():
        return int(text)
    if default is not None and text is None:
        return default
    raise DeviceError(f"sysfs attribute {path} is {'missing' if text is None else repr(text)}")


def _optional_int(path: Path) -> int | None:
    text = _attr(path)
    return int(text) if text is not None and text.isdecimal() else None


def _flag(path: Path) -> bool | None:
    text = _attr(path)
    return None if text is None else text == "1"


def _serial(disk: Path) -> str | None:
    # virtio-blk keeps its serial on the disk, not on the device
    return _attr(disk / "device" / "serial") or _attr(disk / "serial")


def _firmware(disk: Path) -> str | None:
    # SCSI calls it rev
    return _attr(disk / "device" / "firmware_rev") or _attr(disk / "device" / "rev")


def selected_scheduler(text: str | None) -> str | None:
    """The [bracketed] entry of queue/scheduler; a lone entry is the selected one."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    if match:
        return match.group(1)
    entries = text.split()
    return entries[0] if len(entries) == 1 else None
