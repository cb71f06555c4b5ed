"""This machine as a device's site."""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity, identify
from pytest_ssd.device.node import DeviceLock, device_key
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.summary import DeviceSummary, summarize
from pytest_ssd.device.view import View
from pytest_ssd.errors import present
from pytest_ssd.fio.runners import HERE, FioRunner
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Source, find_source
from pytest_ssd.machine.locks import NodeLocks
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.site.base import Key, Site, Tuning
from pytest_ssd.state.accounting import Counters, read_counters, stat_file
from pytest_ssd.state.progress import Progress


@dataclass
class LocalLock:
    """A device's ``flock`` on this machine (:class:`~pytest_ssd.device.node.DeviceLock`)."""

    held: DeviceLock
    pid: int | None = None

    def pinned(self, identity: DeviceIdentity) -> Pinned:
        key = present(self.held.key, "the key of the device locked")
        return Pinned.of(key, identity)  # of the open descriptor, not of the name

    def claim(self) -> None:
        self.held.claim()

    def claim_ahead(self) -> None:
        """Nothing to send: a claim here is one open(2)."""


@dataclass
class LocalSite(Site):
    """This machine: its devices, files and processes, read and run here."""

    #: the session's locks on devices here, and the one holder of them all
    locks: list[DeviceLock] = field(default_factory=list)
    holder: NodeLocks = field(default_factory=lambda: LOCAL.locks(Path()))

    @property
    def machine(self) -> Machine:
        return LOCAL

    def located(self, node: Path) -> str:
        return str(node)

    def labelled(self, label: str) -> str:
        return label

    def snapshot(self, path: str) -> View:
        return View.of(LOCAL, path)

    def view(self, path: str, lock_pid: int | None, claimed: frozenset[int]) -> View:
        return View.of(LOCAL, path, write=True, claimed=claimed)

    def key(self, node: Path, view: View, raw: str) -> Key:
        return device_key(node)

    def lock(self, node: Path, key: Key) -> LocalLock:
        held = DeviceLock(self.holder, str(node))
        held.acquire()
        self.locks.append(held)
        return LocalLock(held)

    def read(self, path: Path, view: View | None = None) -> tuple[Key, DeviceIdentity]:
        return device_key(path), identify(path)

    def summary(self, identity: DeviceIdentity, warnings: list[str]) -> DeviceSummary:
        return summarize(identity)

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
