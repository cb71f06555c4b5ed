"""The device summary: what a review's "DUT summary" table says about a device under test.

Built by :func:`summarize` from a :class:`DeviceIdentity` (which already holds
nvme-cli's id-ctrl and id-ns) and from sysfs under *sysfs_root*: the PCIe link of
an NVMe controller, the vendor, revision, write cache and SATA link of a SCSI
disk.  Values the device or the kernel does not give are ``None`` in the data
and "not exposed" in the text; a threshold the controller reports as 0 is "not
reported".  Loop devices and regular files are described for what they are and
flagged as not SSDs.  :meth:`DeviceSummary.rows` and the NVMe tables of
:class:`NvmeDetails` give plain text; ``pytest_ssd.report.summary`` escapes and
lays it out as HTML.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.identity import SYSFS, DeviceIdentity, decimal_size
from pytest_ssd.device.link import READS as LINK_READS
from pytest_ssd.device.link import PcieLink, SataLink, pcie_link, read_attr, sata_link
from pytest_ssd.device.nvme import LbaFormat, NvmeInfo, PowerState
from pytest_ssd.machine.snapshot import Reads

NOT_EXPOSED = "not exposed"
#: sysfs has the attribute, but the device or bus gave no value (a link speed "Unknown",
#: a width of 0 or 255 on a controller on the root bus, as QEMU's microvm shows)
NOT_REPORTED = "not reported"
_NO_WIDTH = ("0", "255")
KELVIN_AT_0_C = 273.15
LBA_FORMAT_COLUMNS = ("Format", "Data size", "Metadata size", "Relative performance", "In use")
#: what :func:`summarize` reads of a device's sysfs (its links, a SCSI disk's attributes)
READS = LINK_READS | Reads(
    node=("partition",), device=("vendor", "model", "rev", "scsi_disk/*/cache_type")
)
POWER_STATE_COLUMNS = (
    "State",
    "Max power",
    "Non-operational",
    "Entry latency (µs)",
    "Exit latency (µs)",
)


@dataclass(frozen=True)
class NvmeDetails:
    """What id-ctrl and id-ns add for an NVMe namespace; temperatures in °C, None: not reported."""

    version: str
    vendor_id: int
    lba_formats: tuple[LbaFormat, ...]
    lba_format_in_use: int
    warning_temp_c: float | None
    critical_temp_c: float | None
    power_states: tuple[PowerState, ...]
    sanitize_block_erase: bool
    sanitize_crypto_erase: bool
    sanitize_overwrite: bool
    format_all_namespaces: bool
    format_crypto_erase: bool
    volatile_write_cache: bool

    @classmethod
    def from_info(cls, info: NvmeInfo) -> NvmeDetails:
        """The details of one parsed id-ctrl / id-ns pair."""
        ctrl, ns = info.controller, info.namespace
        return cls(
            version=ctrl.version,
            vendor_id=ctrl.vid,
            lba_formats=ns.lba_formats,
            lba_format_in_use=ns.lba_format_index,
            warning_temp_c=kelvin_to_celsius(ctrl.wctemp_k),
            critical_temp_c=kelvin_to_celsius(ctrl.cctemp_k),
            power_states=ctrl.power_states,
            sanitize_block_erase=ctrl.sanitize_block,
            sanitize_crypto_erase=ctrl.sanitize_crypto,
            sanitize_overwrite=ctrl.sanitize_overwrite,
            format_all_namespaces=ctrl.format_all_namespaces,
            format_crypto_erase=ctrl.format_crypto_supported,
            volatile_write_cache=ctrl.volatile_write_cache,
        )

    def lba_format_rows(self) -> list[tuple[str, ...]]:
        """One row of text per LBA format, in :data:`LBA_FORMAT_COLUMNS` order."""
        return [
            (
                f"#{f.index}",
                f"{f.data_size} B" if f.data_size else "not supported",
                f"{f.metadata_size} B",
                f"{f.relative_performance} ({f.performance})",
                "in use" if f.index == self.lba_format_in_use else "",
            )
            for f in self.lba_formats
        ]

    def power_state_rows(self) -> list[tuple[str, ...]]:
        """One row of text per power state, in :data:`POWER_STATE_COLUMNS` order."""
        return [
            (
                f"PS{ps.index}",
                power_text(ps),
                "yes" if ps.non_operational else "no",
                f"{ps.entry_latency_us:,}",
                f"{ps.exit_latency_us:,}",
            )
            for ps in self.power_states
        ]


@dataclass(frozen=True)
class ScsiDetails:
    """What sysfs shows of a SCSI (or SATA through libata) disk: ``device/*`` and ``scsi_disk``."""

    vendor: str | None
    model: str | None
    revision: str | None
    cache_type: str | None


@dataclass(frozen=True)
class DeviceSummary:
    """One device under test as a DUT summary shows it; None means not exposed."""

    path: str
    kernel_name: str | None
    interface: str
    description: str
    ssd: bool | None
    model: str | None
    serial: str | None
    firmware: str | None
    capacity_bytes: int
    logical_block_size: int
    physical_block_size: int
    rotational: bool | None
    backing_file: str | None = None
    direct_io: bool | None = None
    pcie: PcieLink | None = None
    sata: SataLink | None = None
    nvme: NvmeDetails | None = None
    scsi: ScsiDetails | None = None
    #: what udev adds (:mod:`.udev.info`): World Wide Name, by-id links, parent controller
    wwn: str | None = None
    by_id: tuple[str, ...] = ()
    controller: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results, with the capacity also in GiB and as sold."""
        fields = dataclasses.asdict(self)
        fields["capacity_gib"] = round(self.capacity_bytes / 2**30, 3)
        fields["capacity_decimal"] = decimal_size(self.capacity_bytes)
        return fields

    def tables(self) -> dict[str, list[list[str]] | None]:
        """The summary's tables as text, for JSON: its rows, and the NVMe sub-tables (or None)."""
        nvme = self.nvme
        return {
            "rows": [list(row) for row in self.rows()],
            "lba_formats": [list(r) for r in nvme.lba_format_rows()] if nvme else None,
            "power_states": [list(r) for r in nvme.power_state_rows()] if nvme else None,
        }

    def rows(self) -> list[tuple[str, str]]:
        """The summary table as (label, text) pairs; the same labels for every kind of device."""
        nvme = self.nvme
        return [
            ("Device", self.path),
            ("What it is", self.description),
            ("Vendor", self._vendor()),
            ("Model", self.model or NOT_EXPOSED),
            ("Serial", self.serial or NOT_EXPOSED),
            ("Firmware", self.firmware or NOT_EXPOSED),
            ("WWN", self.wwn or NOT_EXPOSED),
            ("Links (by-id)", ", ".join(self.by_id) or NOT_EXPOSED),
            ("Controller", self.controller or NOT_EXPOSED),
            ("Capacity", capacity_text(self.capacity_bytes)),
            (
                "Block size (logical / physical)",
                f"{self.logical_block_size} B / {self.physical_block_size} B",
            ),
            ("Rotational", self._rotational()),
            *self._link_rows(),
            ("Volatile write cache", self._write_cache()),
            *((label, text(nvme) if nvme else NOT_EXPOSED) for label, text in _NVME_ROWS),
        ]

    def _rotational(self) -> str:
        if self.interface in ("loop", "file"):
            # a loop device's flag is the kernel's default, not a medium's: it has none
            return f"not applicable (a {self.interface} has no medium of its own)"
        return _yes_no(self.rotational)

    def _vendor(self) -> str:
        if self.nvme:
            return f"PCI vendor ID {self.nvme.vendor_id:#06x}"
        return (self.scsi.vendor if self.scsi else None) or NOT_EXPOSED

    def _write_cache(self) -> str:
        if self.nvme:
            return "present (VWC)" if self.nvme.volatile_write_cache else "not present (VWC)"
        return (self.scsi.cache_type if self.scsi else None) or NOT_EXPOSED

    def _link_rows(self) -> list[tuple[str, str]]:
        link, speed, width = "Link", "Link speed (current / max)", "Link width (current / max)"
        if self.pcie:
            p = self.pcie
            return [
                (link, f"PCIe, PCI function {p.address}"),
                (speed, f"{_link_speed(p.current_speed)} / {_link_speed(p.max_speed)}"),
                (width, f"{_lanes(p.current_width)} / {_lanes(p.max_width)}"),
            ]
        if self.sata:
            s = self.sata
            current, limit = _or_not_exposed(s.current_speed), _or_not_exposed(s.max_speed)
            return [
                (link, f"SATA, port {s.port}"),
                (speed, f"{current} / {limit} (port limit)"),
                (width, NOT_EXPOSED),
            ]
        return [(link, NOT_EXPOSED), (speed, NOT_EXPOSED), (width, NOT_EXPOSED)]


def kelvin_to_celsius(kelvin: int) -> float | None:
    """A temperature threshold in °C to two decimals; 0 K means the device does not report it."""
    return round(kelvin - KELVIN_AT_0_C, 2) if kelvin else None


def capacity_text(n: int) -> str:
    """'2,147,483,648 bytes = 2.00 GiB = 2.15 GB'."""
    return f"{n:,} bytes = {n / 2**30:,.2f} GiB = {decimal_size(n)}"


def power_text(ps: PowerState) -> str:
    """Max power with the precision its scale gives: '25.00 W', or '3.5000 W' when MXPS is set."""
    digits = 4 if ps.max_power_scale_w < 0.01 else 2
    return f"{ps.max_power_w:.{digits}f} W"


def _or_not_exposed(text: str | None) -> str:
    return text if text is not None else NOT_EXPOSED


def _link_speed(text: str | None) -> str:
    if text is not None and text.startswith("Unknown"):
        return NOT_REPORTED
    return _or_not_exposed(text)


def _lanes(width: str | None) -> str:
    if width in _NO_WIDTH:
        return NOT_REPORTED
    return f"x{width}" if width is not None else NOT_EXPOSED


def _yes_no(flag: bool | None) -> str:
    return NOT_EXPOSED if flag is None else ("yes" if flag else "no")


def _temperature(celsius: float | None) -> str:
    return NOT_REPORTED if celsius is None else f"{celsius:.2f} °C"


def _lba_in_use(nvme: NvmeDetails) -> str:
    fmt = nvme.lba_formats[nvme.lba_format_in_use]
    return (
        f"#{fmt.index}: {fmt.data_size} B data + {fmt.metadata_size} B metadata, "
        f"{fmt.performance} performance ({len(nvme.lba_formats)} formats)"
    )


def _sanitize(nvme: NvmeDetails) -> str:
    methods = [
        name
        for name, supported in (
            ("block erase", nvme.sanitize_block_erase),
            ("crypto erase", nvme.sanitize_crypto_erase),
            ("overwrite", nvme.sanitize_overwrite),
        )
        if supported
    ]
    return ", ".join(methods) if methods else "none (sanitize not supported)"


def _format(nvme: NvmeDetails) -> str:
    scope = "applies to all namespaces" if nvme.format_all_namespaces else "per namespace"
    crypto = "supported" if nvme.format_crypto_erase else "not supported"
    return f"{scope}; crypto erase {crypto}"


def _power_states(nvme: NvmeDetails) -> str:
    return ", ".join(
        f"PS{ps.index} {power_text(ps)}{' (non-operational)' if ps.non_operational else ''}"
        for ps in nvme.power_states
    )


_NVME_ROWS: tuple[tuple[str, Callable[[NvmeDetails], str]], ...] = (
    ("NVMe version", lambda n: n.version),
    ("LBA format in use", _lba_in_use),
    ("Warning composite temperature", lambda n: _temperature(n.warning_temp_c)),
    ("Critical composite temperature", lambda n: _temperature(n.critical_temp_c)),
    ("Power states", _power_states),
    ("Sanitize", _sanitize),
    ("Format NVM", _format),
)


def summarize(identity: DeviceIdentity, *, sysfs_root: Path | None = SYSFS) -> DeviceSummary:
    """The summary of *identity*, with what sysfs under *sysfs_root* adds (None: nothing)."""
    disk = _disk_dir(identity, sysfs_root) if sysfs_root is not None else None
    nvme = NvmeDetails.from_info(identity.nvme) if identity.nvme else None
    nvme_disk = disk if identity.transport == "nvme" else None
    scsi_disk = disk if identity.transport == "scsi" else None
    scsi = _scsi_details(scsi_disk) if scsi_disk else None
    interface = _interface(identity.transport, scsi)
    return DeviceSummary(
        path=identity.path,
        kernel_name=identity.kernel_name,
        interface=interface,
        description=_description(identity, interface, disk),
        ssd=_is_ssd(interface, identity.rotational),
        model=identity.model,
        serial=identity.serial,
        firmware=identity.firmware,
        capacity_bytes=identity.size_bytes,
        logical_block_size=identity.logical_block_size,
        physical_block_size=identity.physical_block_size,
        rotational=identity.rotational,
        backing_file=identity.backing_file,
        direct_io=identity.direct_io,
        pcie=pcie_link(nvme_disk, sysfs_root) if nvme_disk and sysfs_root else None,
        sata=sata_link(scsi_disk, sysfs_root) if scsi_disk and sysfs_root else None,
        nvme=nvme,
        scsi=scsi,
        wwn=identity.wwn,
        by_id=identity.by_id,
        controller=identity.controller,
    )


def _disk_dir(identity: DeviceIdentity, sysfs_root: Path) -> Path | None:
    """The sysfs directory of the disk (not the partition) behind a block device."""
    name = identity.kernel_name
    if identity.kind != "block" or name is None:
        return None
    for candidate in (sysfs_root / "class" / "block" / name, sysfs_root / "block" / name):
        if candidate.is_dir():
            node = candidate.resolve()
            return node.parent if (node / "partition").exists() else node
    return None


def _scsi_details(disk: Path) -> ScsiDetails:
    device = disk / "device"
    # one scsi_disk class device per disk, named for its H:C:T:L address
    cache_types = sorted(device.glob("scsi_disk/*/cache_type"))
    return ScsiDetails(
        vendor=read_attr(device / "vendor"),
        model=read_attr(device / "model"),
        revision=read_attr(device / "rev"),
        cache_type=read_attr(cache_types[0]) if cache_types else None,
    )


def _interface(transport: str, scsi: ScsiDetails | None) -> str:
    if scsi is not None:
        # libata (and SAS HBAs passing SATA drives through) report the vendor as "ATA"
        return "SATA" if scsi.vendor == "ATA" else "SCSI"
    return {"nvme": "NVMe", "scsi": "SCSI", "mmc": "MMC"}.get(transport, transport)


def _is_ssd(interface: str, rotational: bool | None) -> bool | None:
    if interface in ("loop", "file") or rotational:
        return False
    if interface in ("NVMe", "SATA", "SCSI") and rotational is False:
        return True
    return None


def _description(identity: DeviceIdentity, interface: str, disk: Path | None) -> str:
    if interface == "file":
        return (
            f"regular file {identity.path}: not an SSD; results measure the file system "
            "and the storage beneath it"
        )
    name = disk.name if disk else identity.kernel_name or identity.path
    part = f"partition {identity.kernel_name} of " if identity.kernel_name != name else ""
    if interface == "loop":
        direct = {True: "on", False: "off", None: NOT_EXPOSED}[identity.direct_io]
        return (
            f"{part}loop device {name} backed by {identity.backing_file or NOT_EXPOSED} "
            f"(direct I/O {direct}): not an SSD; results measure the backing file's "
            "file system and the storage beneath it"
        )
    if interface == "virtio":
        return f"{part}virtio disk {name}: a virtual disk; the medium behind it is not exposed"
    text = f"{part}{interface} {'namespace' if interface == 'NVMe' else 'disk'} {name}"
    if interface == "NVMe" and identity.nvme is None:
        text += " (nvme-cli id-ctrl / id-ns unavailable: NVMe fields not exposed)"
    if identity.rotational:
        text += ": rotational, not an SSD"
    return text
