"""The host environment of the run: each machine's settings read, tuned and put back.

Every machine is tuned alike, one :class:`~pytest_ssd.host.tune.Tuner` each: the
machine the session runs on is reached first of all (its tuner puts back what a session
that died left tuned there); once the devices are known, each machine with a device is
reached (a test host's tuner puts back what a dead session left there), records its
settings (tuned with ``--ssd-tune``), and the session's end restores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_ssd.machine.machine import Machine
from pytest_ssd.site import Tuning

if TYPE_CHECKING:  # a worker neither records nor tunes its machine
    from pytest_ssd.host import HostRecord, Tuner


@dataclass
class HostEnvironment:
    """Each machine's settings (the controller's; none on workers)."""

    #: the machine the session runs on (its site's: reached first of all)
    here: Machine
    #: --ssd-tune
    tune: bool = False
    #: each machine's tuner by its label, the session's own machine's first
    by_machine: dict[str | None, Tuner] = field(default_factory=dict)
    #: what the run measures under (made by :meth:`start`)
    record: HostRecord | None = None

    def _tuner(self, machine: Machine) -> Tuner:
        if machine.host not in self.by_machine:
            from pytest_ssd.host import Tuner  # noqa: PLC0415  # the controller's (see the class)

            self.by_machine[machine.host] = Tuner(machine, self.tune)
        return self.by_machine[machine.host]

    def recover(self) -> None:
        """Put back what a session that died left tuned on the machine the session runs
        on (reached first); refuse to tune beside a live session there."""
        self._tuner(self.here).recover()

    def start(self, tuning: Tuning, warnings: list[str]) -> HostRecord:
        """Read (and tune) the settings of every machine with a device: the host record.

        A run without devices records the settings of the machine the session runs on.
        """
        machines = dict(tuning.machines) or {self.here.host: (self.here, {})}
        ordered = sorted(machines.values(), key=lambda m: m[0].host != self.here.host)
        readings = [
            reading
            for machine, devices in ordered
            for reading in self._tuner(machine).start(devices, warnings)
        ]
        from pytest_ssd.host import HostRecord  # noqa: PLC0415
        from pytest_ssd.host.tune import combined  # noqa: PLC0415

        self.record = HostRecord(tuple(readings), combined(self.tuners()))
        return self.record

    def tuners(self) -> list[Tuner]:
        """Each machine's tuner, the session's own machine's first."""
        return list(self.by_machine.values())

    def restore(self) -> None:
        """Put every tuned setting back."""
        for tuner in self.tuners():
            tuner.restore()
