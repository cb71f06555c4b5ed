"""A block device as udev identifies it: WWN, serial, model, by-id links, parent controller.

udev's database (``ID_SERIAL``, ``ID_WWN``, the ``/dev/disk/by-id`` links) exists only
where udevd runs; without it (a container, a minimal host) pyudev and ``udevadm info``
still give what the kernel says of the device (its uevent: ``DEVPATH``, ``DISKSEQ``)
and sysfs still has an NVMe namespace's ``wwid``: what the database lacks is ``None``
or empty, never guessed (:attr:`UdevInfo.database` says which).

On this machine the device is read through pyudev (libudev, in process); on a test
host ``udevadm info`` of every device is one command there (:func:`read`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.machine.machine import READ_TIMEOUT_S, Machine
from pytest_ssd.machine.snapshot import BLOCK_NAME

#: the links of :attr:`UdevInfo.links`: those that name the drive itself
BY_ID = "/dev/disk/by-id/"
#: set by udevd once it has processed the device: the database has it
INITIALIZED = "USEC_INITIALIZED"
#: where sysfs keeps a WWN: a namespace's own, a SCSI disk's device's
WWIDS = ("wwid", "device/wwid")
_NVME_CONTROLLER = re.compile(r"/nvme/(nvme\d+)/")
_SCSI_DEVICE = re.compile(r"/target[\d:]+/(\d+:\d+:\d+:\d+)/")
_PCI_FUNCTION = re.compile(r"/([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])/")


@dataclass(frozen=True)
class UdevInfo:
    """What udev (or, without udevd, the kernel's uevent and sysfs) says of one block device."""

    #: World Wide Name: udev's ``ID_WWN_WITH_EXTENSION``/``ID_WWN``, else sysfs ``wwid``
    wwn: str | None
    #: udev's ``ID_SERIAL_SHORT`` (the drive's own serial); None without udev's database
    serial: str | None
    model: str | None
    #: the device's ``/dev/disk/by-id`` links (none without udevd)
    links: tuple[str, ...]
    #: the controller the device hangs off: an NVMe controller (``nvme0``), a SCSI device
    #: (``0:0:0:0``), else its PCI function; None for a virtual device (a loop device)
    controller: str | None
    #: udev's database had the device (False: no udevd processed it)
    database: bool


def from_record(
    properties: Mapping[str, str], links: Iterable[str], wwid: str | None = None
) -> UdevInfo:
    """The info of one device from its udev properties, its links and its sysfs ``wwid``."""
    wwn = properties.get("ID_WWN_WITH_EXTENSION") or properties.get("ID_WWN") or wwid
    model = properties.get("ID_MODEL")
    return UdevInfo(
        wwn=(wwn or "").strip() or None,
        serial=properties.get("ID_SERIAL_SHORT") or None,
        model=model.replace("_", " ").strip() if model else None,
        links=tuple(sorted(link for link in links if link.startswith(BY_ID))),
        controller=controller_of(properties.get("DEVPATH", "")),
        database=INITIALIZED in properties,
    )


def enrich(identity: DeviceIdentity, info: UdevInfo | None) -> DeviceIdentity:
    """*identity* with what udev adds: WWN, by-id links, controller.  Its serial and model
    stay those of sysfs and nvme-cli: what names, confirms and pins a device must not change
    with whether udevd runs."""
    if info is None:
        return identity
    return dataclasses.replace(identity, wwn=info.wwn, by_id=info.links, controller=info.controller)


def controller_of(devpath: str) -> str | None:
    """The controller in a device's sysfs path: ``nvme0``, a SCSI address, a PCI function."""
    for pattern in (_NVME_CONTROLLER, _SCSI_DEVICE):
        found = pattern.search(devpath)
        if found:
            return found.group(1)
    functions = _PCI_FUNCTION.findall(devpath)
    return functions[-1] if functions else None


def parse_info(text: str) -> list[tuple[dict[str, str], list[str]]]:
    """Each device's properties and links in ``udevadm info --query=all`` output (one
    paragraph a device: ``E: KEY=value`` and ``S: link`` lines)."""
    found = []
    for paragraph in text.split("\n\n"):
        properties: dict[str, str] = {}
        links = []
        for line in paragraph.splitlines():
            kind, _, value = line.partition(": ")
            if kind == "E":
                key, _, rest = value.partition("=")
                properties[key] = rest
            elif kind == "S":
                links.append(f"/dev/{value}")
        if properties:
            found.append((properties, links))
    return found


def read(machine: Machine, names: Sequence[str]) -> dict[str, UdevInfo]:
    """The udev info of each block device of *names* on *machine* (one it lacks is left out):
    pyudev on this machine, ``udevadm info`` on a test host (nothing without udevadm)."""
    names = [name for name in names if BLOCK_NAME.fullmatch(name)]
    if not names:
        return {}
    if machine.host is None:
        return _here(names)
    return _there(machine, names)


def _here(names: list[str]) -> dict[str, UdevInfo]:
    import pyudev  # noqa: PLC0415  # libudev: loaded when a device is identified

    context = pyudev.Context()
    found = {}
    for name in names:
        try:
            device = pyudev.Devices.from_name(context, "block", name)
        except pyudev.DeviceNotFoundError:
            continue
        disk = device.find_parent("block", "disk") or device
        wwid = disk.attributes.get("wwid") or _scsi_wwid(disk)
        text = wwid.decode(errors="replace") if isinstance(wwid, bytes) else None
        found[name] = from_record(dict(device.properties), device.device_links, text)
    return found


def _scsi_wwid(disk: object) -> bytes | None:
    parent = getattr(disk, "parent", None)
    attributes = getattr(parent, "attributes", None)
    return attributes.get("wwid") if attributes is not None else None


def _there(machine: Machine, names: list[str]) -> dict[str, UdevInfo]:
    paths = [f"/sys/class/block/{name}" for name in names]
    done = machine.run(
        ["udevadm", "info", "--query=all", *paths], timeout=READ_TIMEOUT_S, name="udevadm-info"
    )
    wwids = machine.read_many([f"{path}/wwid" for path in paths])
    by_name = {
        props.get("DEVNAME", "").removeprefix("/dev/"): (props, links)
        for props, links in parse_info(done.stdout)
    }
    found = {}
    for name, wwid in zip(names, wwids, strict=True):
        if name in by_name:
            properties, links = by_name[name]
            found[name] = from_record(properties, links, wwid)
    return found
