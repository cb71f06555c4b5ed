"""This machine as a device's site."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity, identify
from pytest_ssd.device.node import DeviceLock, device_key
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.summary import DeviceSummary, summarize
from pytest_ssd.device.view import LocalView, View
from pytest_ssd.fio.runners import FioRunner, LocalFio
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Source, find_source
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.site.base import Key, Site, Tuning
from pytest_ssd.state.accounting import Counters, counters_on
from pytest_ssd.state.progress import Progress, feeding


@dataclass
class LocalLock:
    """A device's ``flock`` on this machine (:class:`~pytest_ssd.device.node.DeviceLock`)."""

    held: DeviceLock
    pid: int | None = None

    def pinned(self, identity: DeviceIdentity) -> Pinned:
        return Pinned.of(self.held.key, identity)  # of the open descriptor, not of the name

    def claim(self) -> None:
        self.held.claim()

    def claim_ahead(self) -> None:
        """Nothing to send: a claim here is one open(2)."""


@dataclass
class LocalSite(Site):
    """This machine: its devices, files and processes, read and run here."""

    #: the session's locks on devices here
    locks: list[DeviceLock] = field(default_factory=list)

    @property
    def machine(self) -> Machine:
        return LOCAL

    def located(self, node: Path) -> str:
        return str(node)

    def labelled(self, label: str) -> str:
        return label

    def snapshot(self, path: str) -> View:
        return LocalView()

    def view(self, path: str, lock_pid: int | None, claimed: frozenset[int]) -> View:
        return LocalView(claimed=claimed)

    def key(self, node: Path, view: View, raw: str) -> Key:
        return device_key(node)

    def lock(self, node: Path, key: Key) -> LocalLock:
        held = DeviceLock(node)
        held.acquire()
        self.locks.append(held)
        return LocalLock(held)

    def read(self, path: Path, view: View | None = None) -> tuple[Key, DeviceIdentity]:
        return device_key(path), identify(path)

    def summary(self, identity: DeviceIdentity, warnings: list[str]) -> DeviceSummary:
        return summarize(identity)

    def health_source(self, identity: DeviceIdentity) -> tuple[Source | None, str]:
        return find_source(identity, self.machine)

    def runner(self) -> FioRunner:
        return LocalFio(self.machine)

    def counters(self, target: Path, kernel_name: str | None) -> Counters | None:
        return counters_on(self.machine, kernel_name)

    def feeding(
        self, follow: Progress | None, kernel_name: str | None
    ) -> AbstractContextManager[StatusCallback | None]:
        return feeding(follow, self.machine, kernel_name, self.runner().live_status)

    def enlist(self, tuning: Tuning, dut_id: str, identity: DeviceIdentity, tune: bool) -> None:
        tuning.add(self.machine, dut_id, identity)

    def close(self) -> None:
        while self.locks:
            self.locks.pop().release()
