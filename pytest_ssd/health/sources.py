"""Where a device's temperature and health come from: nvme smart-log, hwmon, smartctl.

Each source reads one :class:`HealthSample`; :func:`find_source` picks the
first that applies to a device, or says why there is none (a loop device or a
file has no sensor: the report says so instead of drawing nothing).
"""

from __future__ import annotations

import contextlib
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
from pytest_ssd.machine.machine import Machine

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
    #: the machine the device is in
    machine: Machine
    name: str = "nvme smart-log"

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
    #: the machine the device is in
    machine: Machine
    name: str = "smartctl"

    def read(self) -> HealthSample:
        argv = [self.smartctl, "-j", "-A", str(self.device)]
        done = self.machine.run(argv, timeout=READ_TIMEOUT_S)
        if done.returncode & 0b11:  # bits 0-1: the command line or the device open failed
            raise ToolError(f"smartctl {self.device}: exit {done.returncode}")
        return parse_smartctl(done.stdout, time.time())


@dataclass
class Hwmon:
    """A hwmon folder of the device (drivetemp, nvme): ``temp*_input`` in m°C, temp1 first,
    read on the device's machine in one go."""

    machine: Machine
    folder: str
    #: the folder's ``temp*_input`` files, temp1 first
    inputs: tuple[str, ...]
    name: str = "hwmon"

    def read(self) -> HealthSample:
        values = []
        for path, text in zip(self.inputs, self.machine.read_many(self.inputs), strict=True):
            try:
                values.append(int((text or "").strip()) / 1000)
            except ValueError:
                raise ParseError(f"{path}{self.machine.on}: no temperature in it") from None
        if not values:
            raise ParseError(f"{self.folder}{self.machine.on}: no temp*_input")
        return HealthSample(time.time(), values[0], tuple(values[1:]))


def _index(name: str) -> int:
    digits = "".join(c for c in name.removeprefix("temp").split("_")[0] if c.isdigit())
    return int(digits or 0)


def hwmon_of(identity: DeviceIdentity, machine: Machine, sysfs: str = "/sys") -> Hwmon | None:
    """The hwmon sensors of the device's disk or NVMe controller on *machine*, if any."""
    name = identity.kernel_name
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        return None
    device = f"{sysfs}/block/{name}/device"
    for pattern in (f"{device}/hwmon/hwmon*/temp*_input", f"{device}/hwmon*/temp*_input"):
        found: dict[str, list[str]] = {}
        for path in machine.glob(pattern):
            found.setdefault(path.rpartition("/")[0], []).append(path)
        if found:
            folder = min(found)
            inputs = sorted(found[folder], key=lambda p: _index(p.rpartition("/")[2]))
            return Hwmon(machine, folder, tuple(inputs))
    return None


def without(identity: DeviceIdentity, what: str) -> str | None:
    """Why a regular file or a loop device has no *what* (a sensor, a health log); None else."""
    if identity.kind == "file":
        return f"a regular file has no {what}"
    if identity.transport == "loop":
        return f"a loop device has no {what}"
    return None


def nvme_of(identity: DeviceIdentity, machine: Machine, what: str) -> tuple[str | None, str]:
    """What holds on every machine: (nvme-cli's path there, "") for an NVMe device;
    (None, why) when the device has no *what* (a file, a loop device) or nvme-cli is
    missing; (None, "") for another device."""
    if (why := without(identity, what)) is not None:
        return None, why
    if identity.nvme is None:
        return None, ""
    try:
        return machine.which("nvme", "install nvme-cli"), ""
    except ToolError as exc:
        return None, str(exc)


def find_source(
    identity: DeviceIdentity, machine: Machine, sysfs: str = "/sys"
) -> tuple[Source | None, str]:
    """The health source of a device of *machine* and what it is, or None and why none:
    NVMe its smart-log; another disk its hwmon sensor (drivetemp), else smartctl."""
    nvme, why = nvme_of(identity, machine, "temperature sensor")
    if nvme is not None:
        return NvmeSmartLog(nvme, Path(identity.path), machine=machine), "nvme"
    if why:
        return None, why
    hwmon = hwmon_of(identity, machine, sysfs)
    if hwmon is not None:
        with contextlib.suppress(ParseError, ToolError):  # a sensor that reads, or none
            hwmon.read()
            return hwmon, f"hwmon {hwmon.folder}{machine.on}"
    try:
        path = machine.which("smartctl", "install smartmontools")
    except ToolError:
        return None, (
            f"no hwmon sensor and smartctl is not installed{machine.on}"
            " (apt-get install smartmontools)"
        )
    return Smartctl(path, Path(identity.path), machine=machine), f"smartctl{machine.on}"
