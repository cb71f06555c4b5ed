"""Where a device's temperature and health come from: nvme smart-log, hwmon, smartctl.

Each source reads one :class:`HealthSample`; :func:`find_source` picks the
first that applies to a device, or says why there is none (a loop device or a
file has no sensor: the report says so instead of drawing nothing).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Protocol

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.nvme import load_object
from pytest_ssd.errors import (
    ExtensionError,
    ParseError,
    SsdError,
    ToolError,
    call_extension,
    kind_of,
)
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.proc import which

#: kelvin of 0 °C (NVMe reports temperatures in kelvin)
KELVIN = 273.15
#: critical_warning bit 1: a temperature is above an over- or below an under-temperature threshold
TEMPERATURE_WARNING_BIT = 0x02
READ_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class HealthSample:
    """One reading: the composite temperature, other sensors, and the thermal counters."""

    t: float
    temperature_c: float | None
    sensors_c: tuple[float, ...] = ()
    critical_warning: int = 0
    #: thermal-management transitions so far (NVMe TMT1 + TMT2 counts)
    thermal_transitions: int = 0
    #: minutes spent above the warning composite temperature so far (NVMe WCTEMP time)
    warning_minutes: int = 0


class Source(Protocol):
    """Something that reads the device's health now."""

    name: str

    def read(self) -> HealthSample: ...


def source_problem(source: object) -> str | None:
    """Why *source* (what a plugin returned) is no :class:`Source`, or None."""
    name = getattr(source, "name", None)
    if not isinstance(name, str) or not name:
        return "it has no name" if name is None else f"its name is {kind_of(name)}"
    if not callable(getattr(source, "read", None)):
        return "it has no method read()"
    return None


def sample_problem(sample: object) -> str | None:
    """Why *sample* (what a plugin's ``read()`` returned) is no :class:`HealthSample`, or None."""
    if not isinstance(sample, HealthSample):
        return f"returned {kind_of(sample)} where a HealthSample was expected"
    for f in fields(HealthSample):
        value = getattr(sample, f.name)
        if f.name == "temperature_c" and value is None:
            continue
        numbers = value if f.name == "sensors_c" and isinstance(value, tuple) else (value,)
        if not all(_finite(v) for v in numbers):
            return f"returned a HealthSample whose {f.name} is {value!r:.60}"
    return None


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class PluginSource:
    """A source a plugin gave (``pytest_ssd_health_source``): what its ``read()`` raises or
    returns wrongly is one :class:`ExtensionError` naming it (an unreadable sensor, an
    :class:`SsdError` or OSError, stops sampling as pytest-ssd's own sources do)."""

    source: Source
    #: the plugin: its conftest.py's path or its name
    origin: str
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.source.name

    def read(self) -> HealthSample:
        where = f"health source {self.name!r} of {self.origin}: read()"
        sample = call_extension(where, self.source.read, keep=(SsdError, OSError))
        problem = sample_problem(sample)
        if problem is not None:
            raise ExtensionError(f"{where} {problem}")
        return sample


def parse_smart_log(text: str, t: float) -> HealthSample:
    """``nvme smart-log -o json`` (nvme-cli 2.x): kelvin temperatures, sensors only when present."""
    data = load_object(text, "nvme smart-log")
    if "temperature" not in data:
        raise ParseError("nvme smart-log: field 'temperature' is missing")
    sensors = tuple(
        float(data[f"temperature_sensor_{n}"]) - KELVIN
        for n in range(1, 9)
        if data.get(f"temperature_sensor_{n}")
    )
    return HealthSample(
        t=t,
        temperature_c=float(data["temperature"]) - KELVIN if data["temperature"] else None,
        sensors_c=sensors,
        critical_warning=int(data.get("critical_warning", 0)),
        thermal_transitions=int(data.get("thm_temp1_trans_count", 0))
        + int(data.get("thm_temp2_trans_count", 0)),
        warning_minutes=int(data.get("warning_temp_time", 0)),
    )


def parse_smartctl(text: str, t: float) -> HealthSample:
    """``smartctl -j -A``: ``temperature.current`` in °C (absent when the drive reports none)."""
    data = load_object(text, "smartctl")
    current = (data.get("temperature") or {}).get("current")
    return HealthSample(t=t, temperature_c=None if current is None else float(current))


@dataclass
class NvmeSmartLog:
    """``nvme smart-log DEVICE -o json`` every time it is read."""

    nvme: str
    device: Path
    name: str = "nvme smart-log"
    #: the machine the device is in
    machine: Machine = LOCAL

    def read(self) -> HealthSample:
        argv = [self.nvme, "smart-log", str(self.device), "-o", "json"]
        done = self.machine.run(argv, timeout=READ_TIMEOUT_S)
        done.check(f"nvme smart-log {self.device}")
        return parse_smart_log(done.stdout, time.time())


@dataclass
class Smartctl:
    """``smartctl -j -A DEVICE`` (SATA and SAS drives)."""

    smartctl: str
    device: Path
    name: str = "smartctl"
    #: the machine the device is in
    machine: Machine = LOCAL

    def read(self) -> HealthSample:
        argv = [self.smartctl, "-j", "-A", str(self.device)]
        done = self.machine.run(argv, timeout=READ_TIMEOUT_S)
        if done.returncode & 0b11:  # bits 0-1: the command line or the device open failed
            raise ToolError(f"smartctl {self.device}: exit {done.returncode}")
        return parse_smartctl(done.stdout, time.time())


@dataclass
class Hwmon:
    """A hwmon folder of the device (drivetemp, nvme): ``temp*_input`` in m°C, temp1 first."""

    folder: Path
    name: str = "hwmon"

    def read(self) -> HealthSample:
        inputs = sorted(self.folder.glob("temp*_input"), key=lambda p: _index(p.name))
        values = [int(p.read_text().strip()) / 1000 for p in inputs]
        if not values:
            raise ParseError(f"{self.folder}: no temp*_input")
        return HealthSample(time.time(), values[0], tuple(values[1:]))


@dataclass
class HostHwmon:
    """The hwmon sensors of a device on a test host: every ``temp*_input`` in one command."""

    machine: Machine
    kernel_name: str
    name: str = "hwmon"

    def read(self) -> HealthSample:
        if not self.kernel_name.replace("-", "").replace("_", "").isalnum():
            raise ParseError(f"{self.kernel_name!r} is no block device name")
        block = f"/sys/block/{self.kernel_name}/device"
        script = f"grep -H . {block}/hwmon/hwmon*/temp*_input {block}/hwmon*/temp*_input"
        argv = ["sh", "-c", f"{script} 2>/dev/null || true"]
        done = self.machine.run(argv, timeout=READ_TIMEOUT_S)
        found: dict[str, list[tuple[int, float]]] = {}
        for line in done.stdout.splitlines():
            path, _, value = line.partition(":")
            folder, _, attribute = path.rpartition("/")
            try:
                found.setdefault(folder, []).append((_index(attribute), int(value) / 1000))
            except ValueError:
                continue
        if not found:
            raise ParseError(f"{block} on {self.machine.where}: no hwmon temp*_input")
        values = [v for _, v in sorted(found[min(found)])]
        return HealthSample(time.time(), values[0], tuple(values[1:]))


def _index(name: str) -> int:
    digits = "".join(c for c in name.removeprefix("temp").split("_")[0] if c.isdigit())
    return int(digits or 0)


def hwmon_folder(identity: DeviceIdentity, sysfs: Path = Path("/sys")) -> Path | None:
    """The hwmon folder of the device's disk or NVMe controller, if the kernel has one."""
    name = identity.kernel_name
    if not name:
        return None
    candidates = [sysfs / "block" / name / "device" / "hwmon", sysfs / "block" / name / "device"]
    for base in candidates:
        for folder in sorted(base.glob("hwmon*")):
            if any(folder.glob("temp*_input")):
                return folder
    return None


def without(identity: DeviceIdentity, what: str) -> str | None:
    """Why a regular file or a loop device has no *what* (a sensor, a health log); None else."""
    if identity.kind == "file":
        return f"a regular file has no {what}"
    if identity.transport == "loop":
        return f"a loop device has no {what}"
    return None


def _anywhere(identity: DeviceIdentity, machine: Machine) -> tuple[Source | None, str] | None:
    """What holds on every machine: a file or a loop device has no sensor, NVMe its log."""
    if (why := without(identity, "temperature sensor")) is not None:
        return None, why
    if identity.nvme is not None:
        try:
            nvme = machine.which("nvme", "install nvme-cli")
        except ToolError as exc:
            return None, str(exc)
        return NvmeSmartLog(nvme, Path(identity.path), machine=machine), "nvme"
    return None


def find_source(identity: DeviceIdentity, sysfs: Path = Path("/sys")) -> tuple[Source | None, str]:
    """The health source of a device of this machine and what it is, or None and why none."""
    found = _anywhere(identity, LOCAL)
    if found is not None:
        return found
    folder = hwmon_folder(identity, sysfs)
    if folder is not None:
        return Hwmon(folder), f"hwmon {folder}"
    try:
        path = which("smartctl", "install smartmontools")
    except ToolError:
        return None, "no hwmon sensor and smartctl is not installed (apt-get install smartmontools)"
    return Smartctl(path, Path(identity.path)), "smartctl"


def find_host_source(identity: DeviceIdentity, machine: Machine) -> tuple[Source | None, str]:
    """The same for a device on the test host *machine*: every read there."""
    return _anywhere(identity, machine) or _host_source(identity, machine)


def _host_source(identity: DeviceIdentity, machine: Machine) -> tuple[Source | None, str]:
    """A SATA/SAS drive on a test host: its hwmon sensor (drivetemp), else smartctl there."""
    if identity.kernel_name:
        hwmon = HostHwmon(machine, identity.kernel_name)
        try:
            hwmon.read()
        except (ParseError, ToolError):
            pass
        else:
            return hwmon, f"hwmon of {identity.kernel_name} ({machine.where})"
    try:
        path = machine.which("smartctl", "install smartmontools")
    except ToolError:
        return None, f"no hwmon sensor and smartctl is not installed on {machine.where}"
    return Smartctl(path, Path(identity.path), machine=machine), f"smartctl ({machine.where})"
