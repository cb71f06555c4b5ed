"""What a device's machine offers, whichever machine it is (:class:`Site`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.summary import DeviceSummary
from pytest_ssd.device.view import View
from pytest_ssd.fio.job import FIO_INSTALL_HINT
from pytest_ssd.fio.runners import FioRunner
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Source
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.machine.machine import Machine
from pytest_ssd.state.accounting import Counters
from pytest_ssd.state.progress import Progress

#: what makes two targets the same device (:func:`~pytest_ssd.device.node.device_key`)
Key = tuple[str, int, int]


class SiteLock(Protocol):
    """A device's lock for the session, on its machine."""

    #: the process holding it there (a test host's view counts it as the session's own)
    pid: int | None

    def pinned(self, identity: DeviceIdentity) -> Pinned:
        """What the lock holds, pinned to *identity*: every write checks it still does."""
        ...

    def claim(self) -> None:
        """Claim the device for writing (``O_EXCL``); :class:`SafetyError` when in use."""
        ...

    def claim_ahead(self) -> None:
        """Start the claim :meth:`claim` finishes, where asking costs a round trip."""
        ...


@dataclass
class Tuning:
    """Which devices each machine's settings are read and tuned for (the host record)."""

    #: each machine with a device, and its devices, by the machine's label (None: this one)
    machines: dict[str | None, tuple[Machine, dict[str, DeviceIdentity]]] = field(
        default_factory=dict
    )

    def add(self, machine: Machine, dut_id: str, identity: DeviceIdentity) -> None:
        """Device *dut_id* is in *machine*."""
        self.machines.setdefault(machine.host, (machine, {}))[1][dut_id] = identity

    @property
    def here(self) -> dict[str, DeviceIdentity]:
        """The devices of the machine the session runs on."""
        return self.machines[None][1] if None in self.machines else {}


class Site(ABC):
    """The machine a device is in, with every service pytest-ssd uses there."""

    #: where ``--dut`` said the device is (None: this machine)
    address: HostAddress | None = None

    @property
    @abstractmethod
    def machine(self) -> Machine:
        """The machine's programs and files."""

    def check_tools(self) -> None:
        """:class:`ToolError` in one line unless fio is installed there."""
        self.machine.which("fio", FIO_INSTALL_HINT)

    @abstractmethod
    def located(self, node: Path) -> str:
        """*node* in a message: with its host, if it is on one."""

    @abstractmethod
    def labelled(self, label: str) -> str:
        """A device's *label* on graphs and in the database: with its host, if on one."""

    def described(self, summary: str) -> str:
        """A device's *summary* in the terminal header: with its host, if it is on one."""
        return summary

    def named_again(self, first: str, raw: str) -> str:
        """What to add when ``--dut=raw`` names the device ``--dut=first`` named."""
        return ""

    @abstractmethod
    def snapshot(self, path: str) -> View:
        """The machine's facts about *path* now, for reading."""

    def snapshots(self, paths: list[str]) -> dict[str, View]:
        """:meth:`snapshot` of several *paths* at once, where one look costs: a path left
        out of the answer is looked at alone."""
        return {}

    @abstractmethod
    def view(self, path: str, lock_pid: int | None, claimed: frozenset[int]) -> View:
        """The guard's facts about *path* now, for writing, knowing the session's lock and claim."""

    def views(self, held: dict[str, int | None]) -> dict[str, View]:
        """:meth:`view` of several paths at once (*held*: each one's lock holder), before the
        session's claim, where one look costs: a path left out is looked at alone."""
        return {}

    @abstractmethod
    def key(self, node: Path, view: View, raw: str) -> Key:
        """The device's key, to tell two ``--dut`` of one device (:class:`SafetyError` when it
        cannot be measured there)."""

    @abstractmethod
    def lock(self, node: Path, key: Key) -> SiteLock:
        """Lock *node* for the session (:class:`SafetyError` naming the holder when held)."""

    @abstractmethod
    def read(self, path: Path, view: View | None = None) -> tuple[Key, DeviceIdentity]:
        """The key and identity of *path* now (through *view*, a snapshot of it, if given)."""

    @abstractmethod
    def summary(self, identity: DeviceIdentity, warnings: list[str]) -> DeviceSummary:
        """The device's summary; what kept it short goes to *warnings*."""

    def summaries(self, identities: list[DeviceIdentity]) -> list[tuple[DeviceSummary, list[str]]]:
        """:meth:`summary` of several devices of the machine (what kept each short), at once
        where one look costs."""
        found = []
        for identity in identities:
            said: list[str] = []
            found.append((self.summary(identity, said), said))
        return found

    @abstractmethod
    def health_source(self, identity: DeviceIdentity) -> tuple[Source | None, str]:
        """The device's health source and what it is, or None and why there is none."""

    @abstractmethod
    def runner(self) -> FioRunner:
        """Where fio runs this machine's jobs."""

    @abstractmethod
    def counters(self, target: Path, kernel_name: str | None) -> Counters | None:
        """The kernel's byte counters of the device *target* now (None: it has none)."""

    @abstractmethod
    def feeding(
        self, follow: Progress | None, kernel_name: str | None
    ) -> AbstractContextManager[StatusCallback | None]:
        """The ``on_status`` of a fio run whose progress *follow* shows."""

    @abstractmethod
    def enlist(self, tuning: Tuning, dut_id: str, identity: DeviceIdentity, tune: bool) -> None:
        """Add the device to the settings of its machine to read (and tune, with *tune*)."""
