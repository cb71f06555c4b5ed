"""This machine as a device's site: its device jobs are every machine's (:class:`MachineSite`)."""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.node import DeviceLock
from pytest_ssd.fio.runners import HERE, FioRunner
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Source, find_source
from pytest_ssd.machine.locks import NodeLocks
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.site.base import Tuning
from pytest_ssd.site.jobs import MachineSite
from pytest_ssd.state.accounting import Counters, read_counters, stat_file
from pytest_ssd.state.progress import Progress


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

    def health_source(self, identity: DeviceIdentity) -> tuple[Source | None, str]:
        return find_source(identity)

    def runner(self) -> FioRunner:
        return HERE

    def counters(self, target: Path, kernel_name: str | None) -> Counters | None:
        return read_counters(stat_file(target))

    def feeding(
        self, follow: Progress | None, kernel_name: str | None
    ) -> AbstractContextManager[StatusCallback | None]:
        return contextlib.nullcontext(follow)  # fio's own status, once a second

    def enlist(self, tuning: Tuning, dut_id: str, identity: DeviceIdentity, tune: bool) -> None:
        tuning.here[dut_id] = identity

    def close(self) -> None:
        while self.locks:
            self.locks.pop().release()
