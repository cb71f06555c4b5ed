"""Where fio runs: a child process of this one, or the fio server on a device's machine.

:func:`~pytest_ssd.fio.engine.run_jobs` asks a :class:`FioRunner` for everything that
differs between the two (fio's arguments, the target's size, the stall watch, what
follows the run); which one a machine has follows from what it offers (:func:`runner_on`:
fio is a child of this process where the machine's programs are, its status read live;
elsewhere fio's server runs there and is reached through a forwarded socket).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_ssd.device.pinned import Pinned
from pytest_ssd.errors import FioError, SsdError
from pytest_ssd.fio import agent
from pytest_ssd.fio.agent import Gates
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.server import FioServer, FioServers
from pytest_ssd.fio.watch import StallWatch, capacity, stall_watch
from pytest_ssd.machine.machine import Machine


class FioRunner(Protocol):
    """What :func:`~pytest_ssd.fio.engine.run_jobs` needs of the place fio runs in."""

    #: the machine fio runs on (the target's, whose disks fio reports busy)
    machine: Machine
    #: fio's status reports reach this process while it runs (``--status-interval``);
    #: False: only with its result (``fio --client``)
    live_status: bool

    def where(self, target: str) -> str:
        """The target in a message."""
        ...

    def client_args(self, artifacts: Path) -> list[str]:
        """fio's arguments before its own (``--client`` to reach a server)."""
        ...

    def capacity(self, target: str) -> int | None:
        """Bytes of *target*; None when unknown."""
        ...

    def watch(self, jobs: Sequence[FioJob], target: str) -> StallWatch | None:
        """The stall watch of *jobs* on *target*; None where none can be."""
        ...

    def stalled(self) -> None:
        """fio was stopped for a stall: end what else of it may hang."""
        ...

    def finished(self, artifacts: Path, target: str) -> None:
        """After fio exited: fetch its files; :class:`FioError` when the place was lost."""
        ...

    def batch_gates(self, node: str, pinned: Pinned | None) -> Gates:
        """A fio batch's gates where fio runs, for device *node* (*pinned* by the session).

        Raises :class:`Unbatched` (why, a few words) where no batch can run.
        """
        ...


class Unbatched(FioError):
    """No fio batch can run where the device's fio runs: its points run one by one."""


@dataclass
class ChildFio:
    """fio as a child process of this one, on a machine whose programs are (this one)."""

    machine: Machine
    live_status = True

    def where(self, target: str) -> str:
        return self.machine.naming(target)

    def client_args(self, artifacts: Path) -> list[str]:
        return []

    def capacity(self, target: str) -> int | None:
        return capacity(self.machine, target)

    def watch(self, jobs: Sequence[FioJob], target: str) -> StallWatch | None:
        return stall_watch(self.machine, jobs, target, self.where(target))

    def stalled(self) -> None:
        """The process itself is ended by the runner."""

    def finished(self, artifacts: Path, target: str) -> None:
        """Its files are where it wrote them."""

    def batch_gates(self, node: str, pinned: Pinned | None) -> Gates:
        """The batch agent's gates here (started at the first batch), *node* pinned as on a
        test host."""
        try:
            socket_path = agent.here(self.machine)
        except SsdError as exc:
            raise Unbatched(str(exc)) from None
        return agent.connect(socket_path, self.machine, node, pinned)


@dataclass
class ClientFio:
    """fio as ``fio --client`` of the fio server on a machine (a test host)."""

    server: FioServer
    #: the server's machine (its counters, its devices' sizes)
    machine: Machine
    live_status = False

    def where(self, target: str) -> str:
        return self.machine.naming(target)

    def client_args(self, artifacts: Path) -> list[str]:
        return self.server.client_args(artifacts)

    def capacity(self, target: str) -> int | None:
        return capacity(self.machine, target)

    def watch(self, jobs: Sequence[FioJob], target: str) -> StallWatch | None:
        return stall_watch(self.machine, jobs, target, self.where(target))

    def stalled(self) -> None:
        """Its jobs there hang too: the host ends every fio of the server."""
        self.server.stop()

    def batch_gates(self, node: str, pinned: Pinned | None) -> Gates:
        """The batch agent's gates there, *node* pinned: the agent notes the device's number
        and identity files; the session's full check of the device that follows confirms
        them, and every release compares them."""
        try:
            gates = self.server.batch_gates(self.machine)
        except SsdError as exc:
            raise Unbatched(str(exc)) from None
        if gates is None:
            raise Unbatched("no perl there for the batch agent")
        return gates.pin_device(node, pinned)

    def finished(self, artifacts: Path, target: str) -> None:
        self.server.fetched(artifacts)
        if not self.server.alive:
            lost = "the fio server was lost (its connection ended)"
            raise FioError(f"fio on {self.where(target)}: {lost}")


def runs_live(machine: Machine) -> bool:
    """fio's status reaches this process live where fio runs for *machine* (the
    :attr:`~FioRunner.live_status` of :func:`runner_on`'s runner), known without starting it."""
    return ChildFio.live_status if machine.children else ClientFio.live_status


def runner_on(machine: Machine, servers: FioServers) -> FioRunner:
    """Where fio runs *machine*'s jobs: a child of this process where the machine's programs
    are (its status live, no server in between); else ``fio --client`` of the machine's fio
    server for this process (*servers*: started on first use)."""
    if machine.children:
        return ChildFio(machine)
    return ClientFio(servers.on(machine), machine)
