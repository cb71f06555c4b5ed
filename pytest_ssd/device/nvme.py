"""What an NVMe controller and namespace say about themselves (nvme-cli 2.3 JSON).

Only the fields the plugin acts on are kept: identity for the report, the
sanitize and format capabilities a purge chooses between, the temperature
thresholds, and the LBA format and write granularity that align the workloads.
nvme-cli prints 128-bit counters (``tnvmcap``) as decimal strings and
temperatures in kelvin.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ssd.errors import ParseError
from pytest_ssd.proc.runner import run, which

NVME_TIMEOUT_S = 30.0
INSTALL_HINT = "apt-get install nvme-cli"
_ID_CTRL = "nvme id-ctrl"
_ID_NS = "nvme id-ns"

# bit positions, NVMe Base Specification 2.0 figure 275 (id-ctrl) and 276 (id-ns)
_OACS_FORMAT = 1 << 1
_FNA_CRYPTO_ERASE = 1 << 2
_SANICAP_CRYPTO, _SANICAP_BLOCK, _SANICAP_OVERWRITE = 1 << 0, 1 << 1, 1 << 2
_NSFEAT_OPTPERF = 1 << 4
_FLBAS_INDEX = 0x0F
_DLFEAT_READ_BEHAVIOUR = 0x07
_DLFEAT_READS_ZEROES = 1


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

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return dataclasses.asdict(self)


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

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class NvmeInfo:
    """Controller and namespace of one NVMe block device."""

    controller: NvmeController
    namespace: NvmeNamespace

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return {"controller": self.controller.as_dict(), "namespace": self.namespace.as_dict()}


def _load(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
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
    data = _load(text, _ID_CTRL)
    sanicap = _int(data, "sanicap", _ID_CTRL)
    fna = _int(data, "fna", _ID_CTRL)
    oacs = _int(data, "oacs", _ID_CTRL)
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
    )


def _lba_format(data: dict[str, Any]) -> tuple[int, int]:
    """(data size in bytes, metadata size) of the LBA format FLBAS selects."""
    index = _int(data, "flbas", _ID_NS) & _FLBAS_INDEX
    formats = _field(data, "lbafs", _ID_NS)
    if not isinstance(formats, list) or index >= len(formats):
        count = len(formats) if isinstance(formats, list) else 0
        raise ParseError(f"{_ID_NS}: flbas selects lbafs[{index}] but {count} formats are listed")
    entry = formats[index]
    if not isinstance(entry, dict):
        raise ParseError(f"{_ID_NS}: field 'lbafs[{index}]' is not an object: {entry!r}")
    where = f"{_ID_NS} lbafs[{index}]"
    return 1 << _int(entry, "ds", where), _int(entry, "ms", where)


def parse_id_ns(text: str) -> NvmeNamespace:
    """Parse ``nvme id-ns -o json``; :class:`ParseError` names the missing or bad field."""
    data = _load(text, _ID_NS)
    lba_size, metadata_size = _lba_format(data)
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
    )


def _nvme_json(nvme: str, command: str, device: Path, artifacts: Path | None) -> str:
    done = run(
        [nvme, command, str(device), "-o", "json"],
        timeout=NVME_TIMEOUT_S,
        artifacts=artifacts,
        name=f"nvme-{command}",
    )
    return done.check(f"nvme {command} {device}").stdout


def query(device: Path, artifacts: Path | None = None) -> NvmeInfo:
    """Identify the controller and namespace behind *device* (``/dev/nvme0n1``).

    :class:`ToolError` when nvme-cli is missing or fails (with nvme's own message),
    :class:`ParseError` when its output cannot be understood.
    """
    nvme = which("nvme", INSTALL_HINT)
    controller = parse_id_ctrl(_nvme_json(nvme, "id-ctrl", device, artifacts))
    namespace = parse_id_ns(_nvme_json(nvme, "id-ns", device, artifacts))
    return NvmeInfo(controller, namespace)
