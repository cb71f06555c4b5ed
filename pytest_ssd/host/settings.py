"""The host settings METHOD §9 controls, each read from (and written to) the kernel's files.

A setting reads to a :class:`Reading` (its value, or ``None`` where the machine does not
expose it, with the reason) and lists the :class:`Change` objects that would bring it to
the recommendation.  Every path starts at a root that tests point at a fake tree.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytest_ssd.device.identity import DeviceIdentity, selected_scheduler
from pytest_ssd.host.changes import Change, FileWrite
from pytest_ssd.host.io import Roots, TuneError, read_attribute
from pytest_ssd.machine.snapshot import Reads

NOT_AVAILABLE = "not available here"
_CPU_NUMBER = re.compile(r"(\d+)$")
_CPU = "/sys/devices/system/cpu"
#: what the settings read (:func:`host_settings`, :func:`scheduler` of any block device)
READS = Reads(
    files=(
        f"{_CPU}/cpu[0-9]*/cpufreq/scaling_governor",
        f"{_CPU}/cpu[0-9]*/cpufreq/scaling_available_governors",
        f"{_CPU}/cpufreq/boost",
        f"{_CPU}/intel_pstate/no_turbo",
        f"{_CPU}/cpufreq/policy[0-9]*/boost",
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/proc/sys/kernel/randomize_va_space",
        "/sys/block/*/queue/scheduler",
        "/sys/block/*/*/partition",
    )
)


@dataclass(frozen=True)
class Reading:
    """One setting or fact of the host, as found; ``value`` None: not available here."""

    key: str
    title: str
    value: str | None
    #: what METHOD §9 asks for; None for facts that are only recorded
    recommended: str | None = None
    #: where it was read, or why it is not available
    source: str = ""
    #: the device under test it belongs to (scheduler, APST, power state)
    device: str | None = None
    #: the test host it was read on (None: this machine)
    host: str | None = None

    @property
    def available(self) -> bool:
        return self.value is not None

    @property
    def differs(self) -> bool:
        return self.value is not None and self.recommended not in (None, self.value)

    @property
    def name(self) -> str:
        if self.device:
            return f"{self.title} ({self.device})"
        return f"{self.title} (host {self.host})" if self.host else self.title

    def shown(self) -> str:
        return self.value if self.value is not None else f"{NOT_AVAILABLE} ({self.source})"

    def warning(self) -> str | None:
        if not self.differs:
            return None
        return f"{self.name} is {self.value}, the method recommends {self.recommended}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "device": self.device,
            "host": self.host,
            "value": self.value,
            "recommended": self.recommended,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reading:
        return cls(
            data["key"],
            data["title"],
            data.get("value"),
            data.get("recommended"),
            data.get("source", ""),
            data.get("device"),
            data.get("host"),
        )


class Setting(Protocol):
    """Something --ssd-tune can set: read it, list the changes to the recommendation."""

    @property
    def key(self) -> str: ...

    def read(self) -> Reading: ...

    def changes(self) -> list[Change]:
        """The writes that reach the recommendation ([] if there or not available).

        Raises TuneError when the machine cannot take the recommended value.
        """
        ...


@dataclass(frozen=True)
class Unavailable:
    """A setting this machine or device does not have, with the reason."""

    key: str
    title: str
    recommended: str | None
    reason: str
    device: str | None = None

    def read(self) -> Reading:
        return Reading(self.key, self.title, None, self.recommended, self.reason, self.device)

    def changes(self) -> list[Change]:
        return []


@dataclass(frozen=True)
class FileSetting:
    """A setting kept in one kernel file, or the same file of several CPUs."""

    key: str
    title: str
    recommended: str
    paths: tuple[Path, ...]
    #: why the setting is not available when none of *paths* exists
    absent: str
    device: str | None = None
    #: the file lists every choice and brackets the selected one (THP, I/O scheduler)
    bracketed: bool = False
    #: file value -> value shown (boost: "1" -> "on"); unlisted values are shown as they are
    names: tuple[tuple[str, str], ...] = ()
    #: a file beside each path listing the values the kernel takes (scaling_available_governors)
    offered: str | None = None

    def _raw(self, path: Path) -> str | None:
        text = read_attribute(path)
        return selected_scheduler(text) if self.bracketed and text is not None else text

    def _shown(self, raw: str) -> str:
        return dict(self.names).get(raw, raw)

    def _target(self) -> str:
        return {shown: raw for raw, shown in self.names}.get(self.recommended, self.recommended)

    def choices(self, path: Path) -> list[str] | None:
        if self.bracketed:
            text = read_attribute(path) or ""
            return text.replace("[", " ").replace("]", " ").split()
        if self.offered:
            offered = read_attribute(path.parent / self.offered)
            return offered.split() if offered is not None else None
        return None

    def read(self) -> Reading:
        found = [(p, raw) for p in self.paths if (raw := self._raw(p)) is not None]
        if not found:
            return Reading(self.key, self.title, None, self.recommended, self.absent, self.device)
        counts = Counter(self._shown(raw) for _, raw in found)
        if len(counts) == 1:
            value = next(iter(counts))
        else:  # CPUs that disagree: each value with how many CPUs have it
            value = ", ".join(f"{v} ×{n}" for v, n in sorted(counts.items()))
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        return Reading(
            self.key, self.title, value, self.recommended, f"{found[0][0]}{more}", self.device
        )

    def changes(self) -> list[Change]:
        target = self._target()
        planned: list[Change] = []
        for path in self.paths:
            raw = self._raw(path)
            if raw is None or self._shown(raw) == self.recommended:
                continue
            choices = self.choices(path)
            if choices is not None and target not in choices:
                raise TuneError(
                    f"{self.title}: {path} does not offer {target!r} (offers {' '.join(choices)})"
                )
            planned.append(FileWrite(self.key, path, raw, target))
        return planned


def _cpu_number(path: Path) -> int:
    match = _CPU_NUMBER.search(path.parent.parent.name)
    return int(match.group(1)) if match else -1


def governor(roots: Roots) -> FileSetting:
    cpus = roots.sysfs / "devices" / "system" / "cpu"
    paths = sorted(cpus.glob("cpu[0-9]*/cpufreq/scaling_governor"), key=_cpu_number)
    return FileSetting(
        "governor",
        "CPU frequency governor",
        "performance",
        tuple(paths),
        f"no cpufreq driver: {cpus}/cpu*/cpufreq is absent (a VM, or the firmware owns the clock)",
        offered="scaling_available_governors",
    )


def boost(roots: Roots) -> FileSetting:
    """acpi-cpufreq's global boost, intel_pstate's no_turbo (inverted), or per-policy boost."""
    cpus = roots.sysfs / "devices" / "system" / "cpu"
    on_off = (("1", "on"), ("0", "off"))
    candidates = (
        ((cpus / "cpufreq" / "boost",), on_off),
        ((cpus / "intel_pstate" / "no_turbo",), (("0", "on"), ("1", "off"))),
        (tuple(sorted(cpus.glob("cpufreq/policy*/boost"))), on_off),
    )
    paths, names = next(((p, n) for p, n in candidates if p and p[0].exists()), ((), on_off))
    return FileSetting(
        "boost",
        "CPU boost / turbo",
        "off",
        paths,
        f"no {cpus}/cpufreq/boost or intel_pstate/no_turbo",
        names=names,
    )


def transparent_hugepages(roots: Roots) -> FileSetting:
    path = roots.sysfs / "kernel" / "mm" / "transparent_hugepage" / "enabled"
    return FileSetting(
        "thp", "Transparent huge pages", "never", (path,), f"no {path}", bracketed=True
    )


def aslr(roots: Roots) -> FileSetting:
    path = roots.procfs / "sys" / "kernel" / "randomize_va_space"
    return FileSetting("aslr", "ASLR (randomize_va_space)", "0", (path,), f"no {path}")


def host_settings(roots: Roots) -> list[Setting]:
    """The machine-wide settings, in the order METHOD §9 names them."""
    return [governor(roots), boost(roots), transparent_hugepages(roots), aslr(roots)]


def scheduler(roots: Roots, dut_id: str, identity: DeviceIdentity) -> FileSetting | Unavailable:
    """The I/O scheduler of the queue *identity* is on (a partition's disk)."""
    title = "I/O scheduler"
    if identity.kind != "block" or not identity.kernel_name:
        return Unavailable(
            "scheduler", title, "none", "a regular file has no I/O scheduler", dut_id
        )
    node = roots.sysfs / "class" / "block" / identity.kernel_name
    disk = node.resolve().parent if (node / "partition").exists() else node
    path = disk / "queue" / "scheduler"
    return FileSetting("scheduler", title, "none", (path,), f"no {path}", dut_id, bracketed=True)
