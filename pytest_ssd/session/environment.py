"""The host environment of the run: each machine's settings read, tuned and put back.

This machine's tuner comes first of all (it puts back what a session that died left
tuned); once the devices are known, each machine with a device records its settings
(tuned with ``--ssd-tune``), and the session's end restores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_ssd.errors import present
from pytest_ssd.site import Tuning

if TYPE_CHECKING:  # a worker neither records nor tunes its machine
    from pytest_ssd.host import HostRecord, Tuner
    from pytest_ssd.host.tune import MachineTuner


@dataclass
class HostEnvironment:
    """This machine's and each test host's settings (the controller's; none on workers)."""

    #: --ssd-tune
    tune: bool = False
    tuner: Tuner | None = None
    host_tuners: list[MachineTuner] = field(default_factory=list)
    #: what the run measures under (made by :meth:`record`)
    record: HostRecord | None = None

    def recover(self) -> None:
        """Put back what a session that died left tuned on this machine (its state folder)."""
        from pytest_ssd.host import Tuner  # noqa: PLC0415  # the controller's (see the class)

        self.tuner = Tuner(None, self.tune)
        self.tuner.recover()

    def start(self, tuning: Tuning, warnings: list[str]) -> HostRecord:
        """Read (and tune) the settings of every machine with a device: the host record."""
        hosts = list(tuning.hosts.values())
        self.host_tuners = [tuner for tuner, _ in hosts]
        local = present(self.tuner, "the tuner")
        # a run only on test hosts measures nothing under this machine's settings
        here = tuning.here
        mine = local.start(here, warnings) if here or not hosts else []
        theirs = [reading for tuner, devices in hosts for reading in tuner.start(devices, warnings)]
        from pytest_ssd.host import HostRecord  # noqa: PLC0415
        from pytest_ssd.host.tune import combined  # noqa: PLC0415

        self.record = HostRecord((*mine, *theirs), combined(self.tuners()))
        return self.record

    def tuners(self) -> list[MachineTuner]:
        """This machine's tuner and each test host's."""
        return [*([self.tuner] if self.tuner else []), *self.host_tuners]

    def restore(self) -> None:
        """Put every tuned setting back."""
        for tuner in self.tuners():
            tuner.restore()
