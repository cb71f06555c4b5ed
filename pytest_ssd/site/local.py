"""This machine as a device's site: its device jobs are every machine's (:class:`MachineSite`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.node import DeviceLock
from pytest_ssd.fio.runners import FioRunner, LocalFio
from pytest_ssd.machine.locks import NodeLocks
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.site.jobs import MachineSite


@dataclass
class LocalSite(MachineSite):
    """This machine: its devices, files and processes, read and run here."""

    #: the session's locks on devices here, and their one holder (this process)
    locks: list[DeviceLock] = field(default_factory=list)
    _holder: NodeLocks = field(default_factory=lambda: LOCAL.locks(Path()), repr=False)

    @property
    def machine(self) -> Machine:
        return LOCAL

    def holder(self) -> NodeLocks:
        return self._holder

    def keep(self, held: DeviceLock) -> None:
        self.locks.append(held)

    @property
    def live_status(self) -> bool:
        return LocalFio.live_status

    def runner(self) -> FioRunner:
        return LocalFio(self.machine)

    def close(self) -> None:
        while self.locks:
            self.locks.pop().release()
