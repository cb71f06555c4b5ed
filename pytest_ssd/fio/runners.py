"""Where fio runs: a process on this machine, or the fio server on a device's test host.

:func:`~pytest_ssd.fio.engine.run_jobs` asks a :class:`FioRunner` for everything that
differs between the two (fio's arguments, the target's size, the stall watch, what
follows the run); which one a device has is chosen once, where the device is resolved
(:mod:`pytest_ssd.site`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_ssd.errors import FioError
from pytest_ssd.fio.agent import HostGates
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.server import FioServer
from pytest_ssd.fio.watch import StallWatch, capacity_of, watch_for


class FioRunner(Protocol):
    """What :func:`~pytest_ssd.fio.engine.run_jobs` needs of the place fio runs in."""

    #: fio reports the disks it saw busy on this machine (the target's family is checked)
    here: bool

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

    def batch_gates(self) -> HostGates | None:
        """A batch's gates where fio runs (None: here, in the batch's own folder)."""
        ...


class LocalFio:
    """fio as a process of this machine."""

    here = True

    def where(self, target: str) -> str:
        return target

    def client_args(self, artifacts: Path) -> list[str]:
        return []

    def capacity(self, target: str) -> int | None:
        return capacity_of(target)

    def watch(self, jobs: Sequence[FioJob], target: str) -> StallWatch | None:
        return watch_for(jobs, target)

    def stalled(self) -> None:
        """The process itself is ended by the runner."""

    def finished(self, artifacts: Path, target: str) -> None:
        """Its files are where it wrote them."""

    def batch_gates(self) -> HostGates | None:
        return None


#: fio on this machine
HERE = LocalFio()


@dataclass
class HostFio:
    """fio as ``fio --client`` of the fio server on a test host."""

    server: FioServer
    here = False

    def where(self, target: str) -> str:
        return f"{target} ({self.server.ssh.where})"

    def client_args(self, artifacts: Path) -> list[str]:
        return self.server.client_args(artifacts)

    def capacity(self, target: str) -> int | None:
        return capacity_of(target, self.server.ssh)

    def watch(self, jobs: Sequence[FioJob], target: str) -> StallWatch | None:
        return watch_for(jobs, target, self.server.ssh, self.where(target))

    def stalled(self) -> None:
        """Its jobs there hang too: the host ends every fio of the server."""
        self.server.stop()

    def batch_gates(self) -> HostGates | None:
        return self.server.batch_gates()

    def finished(self, artifacts: Path, target: str) -> None:
        self.server.fetched(artifacts)
        if not self.server.alive:
            raise FioError(f"fio on {self.where(target)}: the fio server was lost (ssh ended)")
