"""What an NVMe controller and namespace say about themselves (nvme-cli 2.3 JSON).

Only the fields the plugin acts on or reports are kept: identity, the sanitize
and format capabilities a purge chooses between, the temperature thresholds,
the volatile write cache, the power states, and the LBA formats and write
granularity that align the workloads.  nvme-cli prints 128-bit counters
(``tnvmcap``) as decimal strings and temperatures in kelvin.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ssd.documents import loads_json
from pytest_ssd.errors import ParseError
from pytest_ssd.machine.machine import Machine

NVME_TIMEOUT_S = 30.0
INSTALL_HINT = "apt-get install nvme-cli"
_ID_CTRL = "nvme id-ctrl"
_ID_NS = "nvme id-ns"

# bit positions, NVMe Base Specification 2.0 figure 275 (id-ctrl) and 276 (id-ns)
_OACS_FORMAT = 1 << 1
_FNA_ALL_NAMESPACES, _FNA_CRYPTO_ERASE = 1 << 0, 1 << 2
_VWC_PRESENT = 1 << 0
_PSD_MXPS, _PSD_NOPS = 1 << 0, 1 << 1
_FRMW_SLOT1_RO, _FRMW_SLOTS_SHIFT, _FRMW_SLOTS_MASK = 1 << 0, 1, 0x7
_LPA_TELEMETRY = 1 << 3
_SANICAP_CRYPTO, _SANICAP_BLOCK, _SANICAP_OVERWRITE = 1 << 0, 1 << 1, 1 << 2
_NSFEAT_OPTPERF = 1 << 4
_FLBAS_INDEX_LOW, _FLBAS_INDEX_HIGH = 0x0F, 0x60
_DLFEAT_READ_BEHAVIOUR = 0x07
_DLFEAT_READS_ZEROES = 1
#: Relative Performance (RP) of an LBA format, as the NVMe specification names it
RELATIVE_PERFORMANCE = ("Best", "Better", "Good", "Degraded")


@dataclass(frozen=True)
class PowerState:
    """One power state descriptor (``psds[i]`` of id-ctrl)."""

    index: int
    max_power_w: float
    #: 0.01 W, or 0.0001 W when the descriptor's MXPS bit is set
    max_power_scale_w: float
    non_operational: bool
    entry_latency_us: int
    exit_latency_us: int


@dataclass(frozen=True)
class LbaFormat:
    """One LBA format (``lbafs[i]`` of id-ns); ``data_size`` 0 means the format is unsupported."""

    index: int
    data_size: int
    metadata_size: int
    relative_performance: int
    performance: str


@dataclass(frozen=True)
class NvmeController:
    """The controller, from ``nvme id-ctrl DEV -o json``."""

    model: str
    serial: str
    firmware: str
    vid: int
    version: str
    sanicap: int
    sanitize_crypto: bool
    sanitize_block: bool
    sanitize_overwrite: bool
    fna: int
    format_crypto_supported: bool
    oacs: int
    format_supported: bool
    wctemp_k: int
    cctemp_k: int
    npss: int
    apsta: bool
    tnvmcap: int
    format_all_namespaces: bool = False
    vwc: int = 0
    volatile_write_cache: bool = False
    power_states: tuple[PowerState, ...] = ()
    #: namespaces the controller supports (NN), firmware updates (FRMW), log pages (LPA)
    nn: int = 0
    frmw: int = 0
    lpa: int = 0

    @property
    def firmware_slots(self) -> int:
        """The firmware slots the controller supports (FRMW bits 3:1)."""
        return (self.frmw >> _FRMW_SLOTS_SHIFT) & _FRMW_SLOTS_MASK

    @property
    def slot1_read_only(self) -> bool:
        """Firmware slot 1 is read-only (FRMW bit 0)."""
        return bool(self.frmw & _FRMW_SLOT1_RO)

    @property
    def telemetry(self) -> bool:
        """The telemetry log pages are supported (LPA bit 3)."""
        return bool(self.lpa & _LPA_TELEMETRY)

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NvmeController:
        """The controller :meth:`as_dict` gave."""
        states = tuple(PowerState(**state) for state in data.get("power_states", ()))
        return cls(**{**data, "power_states": states})


@dataclass(frozen=True)
class NvmeNamespace:
    """The namespace, from ``nvme id-ns DEV -o json``; sizes in logical blocks."""

    nsze: int
    ncap: int
    nuse: int
    lba_size: int
    metadata_size: int
    dlfeat: int
    deallocated_reads_zeroes: bool
    npwg: int
    nows: int
    indirection_unit_bytes: int | None
    lba_format_index: int = 0
    lba_formats: tuple[LbaFormat, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NvmeNamespace:
        """The namespace :meth:`as_dict` gave."""
        formats = tuple(LbaFormat(**lbaf) for lbaf in data.get("lba_formats", ()))
        return cls(**{**data, "lba_formats": formats})


@dataclass(frozen=True)
class NvmeInfo:
    """Controller and namespace of one NVMe block device."""

    controller: NvmeController
    namespace: NvmeNamespace

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return {"controller": self.controller.as_dict(), "namespace": self.namespace.as_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NvmeInfo:
        """The device :meth:`as_dict` gave."""
        return cls(
            NvmeController.from_dict(data["controller"]),
            NvmeNamespace.from_dict(data["namespace"]),
        )


def load_object(text: str, what: str) -> dict[str, Any]:
    """A tool's JSON output that must be an object; :class:`ParseError` naming *what* else."""
    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{what}: output is not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ParseError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _field(data: dict[str, Any], key: str, what: str) -> object:
    if key not in data:
        raise ParseError(f"{what}: field {key!r} is missing")
    return data[key]


def _int(data: dict[str, Any], key: str, what: str) -> int:
    """An integer field; 128-bit counters arrive as decimal strings."""
    value = _field(data, key, what)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdecimal():
        return int(value)
    raise ParseError(f"{what}: field {key!r} is not an integer: {value!r}")


def _list(data: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
    """A list of objects, such as ``psds`` or ``lbafs``."""
    value = _field(data, key, what)
    if not isinstance(value, list):
        raise ParseError(f"{what}: field {key!r} is not a list: {value!r}")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise ParseError(f"{what}: field '{key}[{i}]' is not an object: {entry!r}")
    return value


def _str(data: dict[str, Any], key: str, what: str) -> str:
    """A text field with its space padding stripped."""
    value = _field(data, key, what)
    if not isinstance(value, str):
        raise ParseError(f"{what}: field {key!r} is not a string: {value!r}")
    return value.strip()


def version_text(ver: int) -> str:
    """VER (major << 16 | minor << 8 | tertiary) as "1.4" or "1.4.1"; 0 means not reported."""
    if ver == 0:
        return "unreported"
    major, minor, tertiary = ver >> 16, (ver >> 8) & 0xFF, ver & 0xFF
    return f"{major}.{minor}.{tertiary}" if tertiary else f"{major}.{minor}"


def parse_id_ctrl(text: str) -> NvmeController:
    """Parse ``nvme id-ctrl -o json``; :class:`ParseError` names the missing or bad field."""
    data = load_object(text, _ID_CTRL)
    sanicap = _int(data, "sanicap", _ID_CTRL)
    fna = _int(data, "fna", _ID_CTRL)
    oacs = _int(data, "oacs", _ID_CTRL)
    vwc = _int(data, "vwc", _ID_CTRL)
    return NvmeController(
        model=_str(data, "mn", _ID_CTRL),
        serial=_str(data, "sn", _ID_CTRL),
        firmware=_str(data, "fr", _ID_CTRL),
        vid=_int(data, "vid", _ID_CTRL),
        version=version_text(_int(data, "ver", _ID_CTRL)),
        sanicap=sanicap,
        sanitize_crypto=bool(sanicap & _SANICAP_CRYPTO),
        sanitize_block=bool(sanicap & _SANICAP_BLOCK),
        sanitize_overwrite=bool(sanicap & _SANICAP_OVERWRITE),
        fna=fna,
        format_crypto_supported=bool(fna & _FNA_CRYPTO_ERASE),
        oacs=oacs,
        format_supported=bool(oacs & _OACS_FORMAT),
        wctemp_k=_int(data, "wctemp", _ID_CTRL),
        cctemp_k=_int(data, "cctemp", _ID_CTRL),
        npss=_int(data, "npss", _ID_CTRL),
        apsta=bool(_int(data, "apsta", _ID_CTRL)),
        tnvmcap=_int(data, "tnvmcap", _ID_CTRL),
        format_all_namespaces=bool(fna & _FNA_ALL_NAMESPACES),
        vwc=vwc,
        volatile_write_cache=bool(vwc & _VWC_PRESENT),
        power_states=tuple(
            _power_state(i, psd) for i, psd in enumerate(_list(data, "psds", _ID_CTRL))
        ),
        nn=_int(data, "nn", _ID_CTRL),
        frmw=_int(data, "frmw", _ID_CTRL),
        lpa=_int(data, "lpa", _ID_CTRL),
    )


def _power_state(index: int, psd: dict[str, Any]) -> PowerState:
    where = f"{_ID_CTRL} psds[{index}]"
    if "flags" in psd:  # nvme-cli 2.3 prints the raw flags byte
        flags = _int(psd, "flags", where)
        mxps, nops = bool(flags & _PSD_MXPS), bool(flags & _PSD_NOPS)
    else:  # later nvme-cli splits it into two fields
        mxps = bool(_int(psd, "max_power_scale", where))
        nops = bool(_int(psd, "non-operational_state", where))
    # divide rather than multiply by 0.01: 2500 / 100 is exactly 25.0
    divisor = 10_000 if mxps else 100
    return PowerState(
        index=index,
        max_power_w=_int(psd, "max_power", where) / divisor,
        max_power_scale_w=1 / divisor,
        non_operational=nops,
        entry_latency_us=_int(psd, "entry_lat", where),
        exit_latency_us=_int(psd, "exit_lat", where),
    )


def flbas_index(flbas: int) -> int:
    """The LBA format in use: FLBAS bits 3:0, and bits 6:5 as bits 5:4 of the index (NVMe 2.0)."""
    return (flbas & _FLBAS_INDEX_LOW) | (flbas & _FLBAS_INDEX_HIGH) >> 1


def _lba_format(index: int, entry: dict[str, Any]) -> LbaFormat:
    where = f"{_ID_NS} lbafs[{index}]"
    lbads = _int(entry, "ds", where)
    rp = _int(entry, "rp", where) & 0x3
    return LbaFormat(
        index=index,
        # LBADS is a power of two; 0 marks a format the namespace does not support
        data_size=1 << lbads if lbads else 0,
        metadata_size=_int(entry, "ms", where),
        relative_performance=rp,
        performance=RELATIVE_PERFORMANCE[rp],
    )


def _lba_formats(data: dict[str, Any]) -> tuple[int, tuple[LbaFormat, ...]]:
    """The index FLBAS selects and every listed LBA format."""
    index = flbas_index(_int(data, "flbas", _ID_NS))
    formats = _field(data, "lbafs", _ID_NS)
    count = len(formats) if isinstance(formats, list) else 0
    if index >= count:
        raise ParseError(f"{_ID_NS}: flbas selects lbafs[{index}] but {count} formats are listed")
    entries = _list(data, "lbafs", _ID_NS)
    return index, tuple(_lba_format(i, entry) for i, entry in enumerate(entries))


def parse_id_ns(text: str) -> NvmeNamespace:
    """Parse ``nvme id-ns -o json``; :class:`ParseError` names the missing or bad field."""
    data = load_object(text, _ID_NS)
    in_use, formats = _lba_formats(data)
    lba_size, metadata_size = formats[in_use].data_size, formats[in_use].metadata_size
    dlfeat = _int(data, "dlfeat", _ID_NS)
    npwg = _int(data, "npwg", _ID_NS)
    # NPWG is a 0's based count, meaningful only when NSFEAT says the fields are valid
    optperf = bool(_int(data, "nsfeat", _ID_NS) & _NSFEAT_OPTPERF)
    return NvmeNamespace(
        nsze=_int(data, "nsze", _ID_NS),
        ncap=_int(data, "ncap", _ID_NS),
        nuse=_int(data, "nuse", _ID_NS),
        lba_size=lba_size,
        metadata_size=metadata_size,
        dlfeat=dlfeat,
        deallocated_reads_zeroes=(dlfeat & _DLFEAT_READ_BEHAVIOUR) == _DLFEAT_READS_ZEROES,
        npwg=npwg,
        nows=_int(data, "nows", _ID_NS),
        indirection_unit_bytes=(npwg + 1) * lba_size if optperf and npwg > 0 else None,
        lba_format_index=in_use,
        lba_formats=formats,
    )


def _nvme_json(
    machine: Machine, nvme: str, command: str, device: Path, artifacts: Path | None
) -> str:
    done = machine.run(
        [nvme, command, str(device), "-o", "json"],
        timeout=NVME_TIMEOUT_S,
        artifacts=artifacts,
        name=f"nvme-{command}",
    )
    return done.check(f"nvme {command} {device}").stdout


def query(device: Path, artifacts: Path | None, machine: Machine) -> NvmeInfo:
    """Identify the controller and namespace behind *device* (``/dev/nvme0n1``) on *machine*.

    :class:`ToolError` when nvme-cli is missing or fails (with nvme's own message),
    :class:`ParseError` when its output cannot be understood.
    """
    nvme = machine.which("nvme", INSTALL_HINT)
    controller = parse_id_ctrl(_nvme_json(machine, nvme, "id-ctrl", device, artifacts))
    namespace = parse_id_ns(_nvme_json(machine, nvme, "id-ns", device, artifacts))
    return NvmeInfo(controller, namespace)


#: a data unit of the SMART log: 1000 units of 512 bytes (NVMe 2.0 figure 207)
DATA_UNIT_BYTES = 512_000
_SMART_LOG, _FW_LOG = "nvme smart-log", "nvme fw-log"


@dataclass(frozen=True)
class SmartCounters:
    """The wear counters of ``nvme smart-log -o json``."""

    data_units_written: int
    data_units_read: int
    percent_used: int

    @property
    def written_bytes(self) -> int:
        """The bytes the data units count at most (each unit is rounded up)."""
        return self.data_units_written * DATA_UNIT_BYTES


def parse_smart_counters(text: str) -> SmartCounters:
    """The wear counters of ``nvme smart-log -o json``; :class:`ParseError` naming the field."""
    data = load_object(text, _SMART_LOG)
    return SmartCounters(
        data_units_written=_int(data, "data_units_written", _SMART_LOG),
        data_units_read=_int(data, "data_units_read", _SMART_LOG),
        percent_used=_int(data, "percent_used", _SMART_LOG),
    )


@dataclass(frozen=True)
class FirmwareLog:
    """``nvme fw-log -o json``: the active slot and each filled slot's revision."""

    active_slot: int
    revisions: dict[int, str]


def parse_fw_log(text: str) -> FirmwareLog:
    """``{"nvme0": {"Active Firmware Slot (afi)": 1, "Firmware Rev Slot 1": "..."}}``."""
    data = load_object(text, _FW_LOG)
    if len(data) != 1 or not isinstance(next(iter(data.values())), dict):
        raise ParseError(f"{_FW_LOG}: expected one controller's object, got {sorted(data)}")
    (log,) = data.values()
    afi = _int(log, "Active Firmware Slot (afi)", _FW_LOG)
    revisions = {}
    for key, value in log.items():
        if key.startswith("Firmware Rev Slot "):
            slot = key.removeprefix("Firmware Rev Slot ")
            if not slot.isdecimal():
                raise ParseError(f"{_FW_LOG}: field {key!r} names no slot")
            # nvme-cli 2.3 prints the revision as a number and its text: '231... (1.0.....)'
            shown = str(value)
            text_part = shown.partition(" (")[2].removesuffix(")")
            revisions[int(slot)] = text_part or shown
    # AFI bits 2:0: the slot the running firmware came from
    return FirmwareLog(active_slot=afi & 0x7, revisions=revisions)


def log_json(machine: Machine, device: Path, command: str, artifacts: Path | None) -> str:
    """``nvme COMMAND DEVICE -o json`` on *machine* (smart-log, fw-log, error-log): its text."""
    nvme = machine.which("nvme", INSTALL_HINT)
    return _nvme_json(machine, nvme, command, device, artifacts)
