"""The environment record of a run (METHOD §9): every setting and fact, with the warnings.

It goes into the run's environment (results.json ``run``, the database's
``runs.environment``) under ``host_settings``, ``host_warnings`` and ``tune``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.host import facts, settings
from pytest_ssd.host.io import Io, Roots
from pytest_ssd.host.nvme_features import ApstSetting, power_state
from pytest_ssd.host.settings import Reading, Setting, Unavailable
from pytest_ssd.machine.snapshot import Reads

#: what :meth:`HostRecord.read` reads: the settings (every device's scheduler) and the facts
READS: Reads = settings.READS | facts.READS


@dataclass
class TuneLog:
    """What --ssd-tune did, in words, for the record and the terminal."""

    requested: bool = False
    #: a session that died left the machine tuned: what was put back at start
    recovered: list[str] = field(default_factory=list)
    #: entries of that session's journal refused (not a setting, place or value of ours)
    refused: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    #: settings tuning could not reach, with the reason
    skipped: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    #: what could not be put back (the restore file is kept for the next session)
    failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "recovered": self.recovered,
            "refused": self.refused,
            "changed": self.changed,
            "skipped": self.skipped,
        }


def _nvme_node(roots: Roots, identity: DeviceIdentity) -> str:
    """The kernel's own node of the device (what a restore accepts), not the path given."""
    return str(roots.dev / identity.kernel_name) if identity.kernel_name else identity.path


def device_settings(roots: Roots, io: Io, devices: Mapping[str, DeviceIdentity]) -> list[Setting]:
    """Per device under test: its I/O scheduler and, on NVMe, APST."""
    found: list[Setting] = []
    for dut_id, identity in devices.items():
        found.append(settings.scheduler(roots, dut_id, identity))
        if identity.transport == "nvme":
            found.append(ApstSetting(_nvme_node(roots, identity), dut_id, io))
        else:
            found.append(Unavailable("apst", "NVMe APST", "off", "not an NVMe device", dut_id))
    return found


def _power_state(io: Io, dut_id: str, identity: DeviceIdentity) -> Reading:
    if identity.transport == "nvme":
        return power_state(io, identity.path, dut_id)
    return Reading("power-state", "NVMe power state", None, None, "not an NVMe device", dut_id)


@dataclass(frozen=True)
class HostRecord:
    """Every reading of the run, in the order shown."""

    readings: tuple[Reading, ...]
    tune: TuneLog = field(default_factory=TuneLog)

    @classmethod
    def read(
        cls,
        roots: Roots,
        io: Io,
        tunables: Iterable[Setting],
        devices: Mapping[str, DeviceIdentity],
        *,
        tune: TuneLog | None = None,
        busy_sample_s: float = facts.BUSY_SAMPLE_S,
        busy: Reading | None = None,
    ) -> HostRecord:
        """Read the settings *tunables* and the facts (after tuning: what the run runs under).

        *busy*: the busy processes as sampled elsewhere (a test host), else sampled here.
        """
        found = [s.read() for s in tunables]
        per_device = [
            reading
            for dut_id, identity in devices.items()
            for reading in (
                *(r for r in found if r.device == dut_id),
                _power_state(io, dut_id, identity),
            )
        ]
        readings = [
            facts.cpu_frequency(roots),
            *(r for r in found if r.device is None),
            *per_device,
            facts.memory(roots),
            busy or facts.busy_processes(roots, busy_sample_s),
        ]
        return cls(tuple(readings), tune or TuneLog())

    def warnings(self) -> list[str]:
        return [w for r in self.readings if (w := r.warning()) is not None]

    def unavailable(self) -> list[Reading]:
        return [r for r in self.readings if not r.available]

    def as_dict(self) -> dict[str, Any]:
        return {
            "host_settings": [r.as_dict() for r in self.readings],
            "host_warnings": self.warnings(),
            "tune": self.tune.as_dict(),
        }

    def table_lines(self) -> list[str]:
        """The readings as plain text: setting, what was found, the recommendation if off it."""
        width = max(len(r.name) for r in self.readings)
        return [
            f"{r.name:<{width}}  {r.shown()}"
            + (f"  (recommended: {r.recommended})" if r.differs else "")
            for r in self.readings
        ]


@dataclass(frozen=True)
class Cell:
    """One run's entry for one setting in a side-by-side table."""

    text: str
    #: the value differs from the method's recommendation
    warn: bool = False


def side_by_side(environments: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Cell]]]:
    """The settings of several runs' environments, one row per setting (and device).

    Runs recorded before settings were: "not recorded"; a setting the machine lacks:
    "not available here" with the reason; a value off the method: the recommendation beside it.
    """
    names: dict[tuple[str, str | None, str | None], str] = {}
    runs = []
    for env in environments:
        readings = [Reading.from_dict(r) for r in env.get("host_settings") or []]
        runs.append({(r.key, r.device, r.host): r for r in readings})
        for r in readings:
            names.setdefault((r.key, r.device, r.host), r.name)
    rows = []
    for key, name in names.items():
        cells = []
        for found in (run.get(key) for run in runs):
            if found is None:
                cells.append(Cell("not recorded"))
            elif found.differs:
                cells.append(Cell(f"{found.value} (recommended: {found.recommended})", warn=True))
            else:
                cells.append(Cell(found.shown()))
        rows.append((name, cells))
    return rows


def tune_summary(environment: Mapping[str, Any]) -> str:
    """What --ssd-tune did in a run, in one line."""
    tune = environment.get("tune")
    if not tune:
        return "not recorded"
    if not tune.get("requested"):
        return "not used"
    changed = tune.get("changed") or []
    text = "changed " + "; ".join(changed) if changed else "nothing to change"
    skipped = tune.get("skipped") or []
    return text + ("; could not set: " + "; ".join(skipped) if skipped else "")
