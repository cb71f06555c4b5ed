"""Fake sites for the session's orchestration tests: devices are plain files in a temporary
folder, each "machine" a name; nothing needs root, a block device, fio or a host."""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity, identify
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.summary import DeviceSummary, summarize
from pytest_ssd.device.view import View
from pytest_ssd.errors import SafetyError
from pytest_ssd.fio.runners import FioRunner
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Source
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.site import Site, Sites, Tuning
from pytest_ssd.site.base import Key
from pytest_ssd.state.accounting import Counters
from pytest_ssd.state.progress import Progress
from tests.fake_machine import HERE, FakeMachine


@dataclass
class FakeLock:
    site: FakeSite
    node: Path
    key: Key
    pid: int | None = 4242

    def pinned(self, identity: DeviceIdentity) -> Pinned:
        return Pinned.of(self.key, identity)

    def claim(self) -> None:
        self.site.events.append(f"claim {self.node.name}")

    def claim_ahead(self) -> None:
        self.site.events.append(f"ahead {self.node.name}")


@dataclass
class FakeSite(Site):
    """A machine whose devices are files here; it records what the session asked of it."""

    name: str
    events: list[str] = field(default_factory=list)
    #: nodes whose lock is held by another session
    held: set[str] = field(default_factory=set)

    @property
    def machine(self) -> Machine:
        return FakeMachine(self.name)

    def located(self, node: Path) -> str:
        return f"{node} on {self.name}"

    def labelled(self, label: str) -> str:
        return f"{label} on {self.name}"

    def snapshot(self, path: str) -> View:
        return View.of(LOCAL, path)

    def view(self, path: str, lock_pid: int | None, claimed: frozenset[int]) -> View:
        self.events.append(f"view {Path(path).name}")
        return View.of(LOCAL, path, claimed=claimed)

    def key(self, node: Path, view: View, raw: str) -> Key:
        st = node.stat()
        return (f"{self.name} file", st.st_dev, st.st_ino)

    def lock(self, node: Path, key: Key) -> FakeLock:
        if node.name in self.held:
            raise SafetyError(f"refusing {node} on {self.name}: locked by another session")
        self.events.append(f"lock {node.name}")
        return FakeLock(self, node, key)

    def read(self, path: Path, view: View | None = None) -> tuple[Key, DeviceIdentity]:
        return self.key(path, View.of(LOCAL, str(path)), ""), identify(path, LOCAL)

    def summary(self, identity: DeviceIdentity, warnings: list[str]) -> DeviceSummary:
        warnings.append("a fake summary")
        return summarize(identity, sysfs_root=None)

    def health_source(self, identity: DeviceIdentity) -> tuple[Source | None, str]:
        return None, f"no sensor on {self.name}"

    def runner(self) -> FioRunner:
        return HERE

    def counters(self, target: Path, kernel_name: str | None) -> Counters | None:
        return None

    def feeding(
        self, follow: Progress | None, kernel_name: str | None
    ) -> AbstractContextManager[StatusCallback | None]:
        return contextlib.nullcontext(follow)

    def enlist(self, tuning: Tuning, dut_id: str, identity: DeviceIdentity, tune: bool) -> None:
        tuning.machines.setdefault(None, (self.machine, {}))[1][f"{self.name}/{dut_id}"] = identity


@dataclass
class FakeSites(Sites):
    """This machine (``here``) and hosts by name, each a :class:`FakeSite`."""

    sites: dict[str, FakeSite] = field(default_factory=dict)

    def of(self, address: HostAddress | None) -> Site:
        name = "here" if address is None else address.host
        return self.sites.setdefault(name, FakeSite(name))
