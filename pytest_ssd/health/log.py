"""The drive's health log as one snapshot: NVMe smart-log (and error log), SATA smartctl.

A :class:`HealthLog` holds the fields health rules name (see :data:`FIELDS`),
read through the device's machine, so a drive in a test host is read there.
A loop device or a file has no health log: :func:`find_log_reader` says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.nvme import load_object
from pytest_ssd.errors import ToolError
from pytest_ssd.health.sources import KELVIN, READ_TIMEOUT_S, nvme_of
from pytest_ssd.machine.machine import Machine

#: what a rule may name, and what it is
FIELDS: dict[str, str] = {
    "critical_warning": "NVMe critical warning bits (SATA: 1 when SMART says failed)",
    "temperature": "composite temperature, °C",
    "available_spare": "available spare, %",
    "available_spare_threshold": "the drive's available spare threshold, %",
    "percentage_used": "percentage of the rated endurance used",
    "media_errors": "media and data integrity errors (SATA: attribute 187)",
    "error_log_entries": "error-log entries over the drive's life",
    "unsafe_shutdowns": "unsafe shutdowns",
    "warning_temp_time": "minutes above the warning temperature",
    "critical_comp_time": "minutes above the critical temperature",
    "reallocated_sectors": "reallocated sectors (SATA attribute 5)",
    "warning_temperature": "the drive's warning temperature threshold (NVMe WCTEMP), °C",
    "critical_temperature": "the drive's critical temperature threshold (NVMe CCTEMP), °C",
}
#: nvme-cli's smart-log keys of each field (they differ between nvme-cli versions)
_NVME_KEYS: dict[str, tuple[str, ...]] = {
    "critical_warning": ("critical_warning",),
    "available_spare": ("avail_spare", "available_spare"),
    "available_spare_threshold": ("spare_thresh", "available_spare_threshold"),
    "percentage_used": ("percent_used", "percentage_used"),
    "media_errors": ("media_errors",),
    "error_log_entries": ("num_err_log_entries",),
    "unsafe_shutdowns": ("unsafe_shutdowns",),
    "warning_temp_time": ("warning_temp_time",),
    "critical_comp_time": ("critical_comp_time",),
}
#: SATA attribute ids of fields
_ATA_IDS = {"media_errors": 187, "reallocated_sectors": 5}


@dataclass(frozen=True)
class HealthLog:
    """One snapshot: each field the drive reports (absent: not reported), and what read it."""

    values: dict[str, float]
    source: str
    t: float = 0.0
    #: the error log's newest entry, when the error count rose (NVMe)
    newest_error: dict[str, Any] = field(default_factory=dict)


class LogReader(Protocol):
    """Reads the drive's health log now; *previous* spares what did not change."""

    name: str

    def read(self, previous: HealthLog | None) -> HealthLog: ...


def _int(value: object) -> float | None:
    """nvme-cli's numbers: ints, 128-bit counters as strings, a ``{"value": N}`` breakdown
    (newer nvme-cli's critical warning); None when none of them."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.strip().isdigit():
        return float(int(value))
    return None


def parse_nvme_smart_log(text: str) -> dict[str, float]:
    """The fields of ``nvme smart-log -o json`` (temperature from kelvin to °C)."""
    data = load_object(text, "nvme smart-log")
    values: dict[str, float] = {}
    for name, keys in _NVME_KEYS.items():
        found = next((_int(data[k]) for k in keys if k in data), None)
        if found is not None:
            values[name] = found
    kelvin = _int(data.get("temperature"))
    if kelvin:
        values["temperature"] = round(kelvin - KELVIN, 2)
    return values


def newest_error(text: str) -> dict[str, Any]:
    """The entry of ``nvme error-log -o json`` with the highest error count ({} when none)."""
    data = load_object(text, "nvme error-log")
    entries = [e for e in data.get("errors", []) if isinstance(e, dict)]
    counted = [e for e in entries if (_int(e.get("error_count")) or 0) > 0]
    return max(counted, key=lambda e: _int(e.get("error_count")) or 0) if counted else {}


def parse_smartctl_health(text: str) -> dict[str, float]:
    """The fields of ``smartctl -j -H -A -l error`` of a SATA drive."""
    data = load_object(text, "smartctl")
    values: dict[str, float] = {}
    passed = (data.get("smart_status") or {}).get("passed")
    if isinstance(passed, bool):
        values["critical_warning"] = 0.0 if passed else 1.0
    current = _int((data.get("temperature") or {}).get("current"))
    if current is not None:
        values["temperature"] = current
    table = (data.get("ata_smart_attributes") or {}).get("table") or []
    raw = {a.get("id"): _int((a.get("raw") or {}).get("value")) for a in table}
    for name, ident in _ATA_IDS.items():
        if raw.get(ident) is not None:
            values[name] = raw[ident]  # type: ignore[assignment]  # checked above
    summary = (data.get("ata_smart_error_log") or {}).get("summary") or {}
    count = _int(summary.get("count"))
    if count is not None:
        values["error_log_entries"] = count
    return values


def thresholds(identity: DeviceIdentity) -> dict[str, float]:
    """The drive's own temperature thresholds (NVMe id-ctrl WCTEMP, CCTEMP), in °C."""
    nvme = identity.nvme
    if nvme is None:
        return {}
    found = {
        "warning_temperature": nvme.controller.wctemp_k,
        "critical_temperature": nvme.controller.cctemp_k,
    }
    return {name: round(k - KELVIN, 2) for name, k in found.items() if k}


@dataclass
class NvmeLogReader:
    """``nvme smart-log``; ``nvme error-log`` only when the error count rose (its newest entry)."""

    nvme: str
    device: Path
    machine: Machine
    constants: dict[str, float] = field(default_factory=dict)
    name: str = "nvme smart-log"

    def read(self, previous: HealthLog | None) -> HealthLog:
        done = self._run("smart-log")
        values = {**parse_nvme_smart_log(done), **self.constants}
        before = previous.values.get("error_log_entries") if previous else None
        newest: dict[str, Any] = {}
        if before is not None and values.get("error_log_entries", before) > before:
            newest = newest_error(self._run("error-log"))
        return HealthLog(values, self.name, time.time(), newest)

    def _run(self, log: str) -> str:
        done = self.machine.run(
            [self.nvme, log, str(self.device), "-o", "json"], timeout=READ_TIMEOUT_S
        )
        done.check(f"nvme {log} {self.device}")
        return done.stdout


@dataclass
class SmartctlLogReader:
    """``smartctl -j -H -A -l error`` (SATA drives)."""

    smartctl: str
    device: Path
    machine: Machine
    name: str = "smartctl"

    def read(self, previous: HealthLog | None) -> HealthLog:
        argv = [self.smartctl, "-j", "-H", "-A", "-l", "error", str(self.device)]
        done = self.machine.run(argv, timeout=READ_TIMEOUT_S)
        if done.returncode & 0b11:  # bits 0-1: the command line or the device open failed
            raise ToolError(f"smartctl {self.device}: exit {done.returncode}")
        return HealthLog(parse_smartctl_health(done.stdout), self.name, time.time())


def find_log_reader(identity: DeviceIdentity, machine: Machine) -> tuple[LogReader | None, str]:
    """The device's health-log reader on *machine* and what it is, or None and why none."""
    nvme, why = nvme_of(identity, machine, "health log")
    if nvme is not None:
        constants = thresholds(identity)
        return NvmeLogReader(nvme, Path(identity.path), machine, constants), "nvme smart-log"
    if why:
        return None, why
    try:
        smartctl = machine.which("smartctl", "install smartmontools")
    except ToolError:
        return None, f"smartctl is not installed on {machine.where} (apt-get install smartmontools)"
    return SmartctlLogReader(smartctl, Path(identity.path), machine), "smartctl"
