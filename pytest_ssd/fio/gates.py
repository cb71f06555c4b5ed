"""A fio batch's gates and processes where its fio runs (:mod:`pytest_ssd.fio.batch`).

:class:`Gates` is all a :class:`~pytest_ssd.fio.batch.Batch` does differently here
and on a test host: :class:`LocalGates` holds FIFOs in the batch's folder and starts
fio as a process of this machine; :class:`~pytest_ssd.fio.agent.HostGates` has the
host's batch agent do the same there.  The device's fio runner gives a batch its
gates (:meth:`~pytest_ssd.fio.runners.FioRunner.batch_gates`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_ssd.fio.agent import AgentFio
from pytest_ssd.fio.job import FIO_INSTALL_HINT, FioJob
from pytest_ssd.fio.watch import StallWatch, capacity, stall_watch
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.proc import Background, spawn, which
from pytest_ssd.proc.runner import may_raise_priority

#: a batch's fio process: this process's child, or one its agent started
FioProcess = Background | AgentFio


class Gates(Protocol):
    """A batch's gates (FIFO ``gate-N`` and ``done-N`` per job) and fio processes."""

    @property
    def idle(self) -> bool:
        """fio starts under ``SCHED_IDLE`` and gets the normal policy back (after :meth:`open`)."""
        ...

    @property
    def checks_device(self) -> bool:
        """Each release checks the pinned device itself (a host's agent)."""
        ...

    @property
    def machine(self) -> Machine:
        """The machine fio runs on (the target's, whose disks fio reports busy)."""
        ...

    @property
    def watch_after(self) -> float:
        """Seconds a released job runs before its stall watch starts."""
        ...

    @property
    def held(self) -> bool:
        """Some gate is held."""
        ...

    def fio(self) -> str:
        """The fio program there."""
        ...

    def open(self, folder: Path, names: list[str]) -> None:
        """Make the FIFOs *names* of the batch whose files are in *folder* here."""
        ...

    def put(self, relative: str, text: str) -> None:
        """Where fio runs, the file *relative* to the batch's folder holds *text* (written here)."""
        ...

    def jobfile(self, relative: str) -> str:
        """fio's argument for the job file of the process in folder *relative*."""
        ...

    def prefix(self, relative: str) -> str:
        """What precedes a gate's name in the job file of the process in folder *relative*."""
        ...

    def spawn(self, relative: str, argv: list[str], artifacts: Path, *, idle: bool) -> FioProcess:
        """Start *argv* in the batch's folder *relative* (*idle*: under ``SCHED_IDLE``)."""
        ...

    def where(self, target: str) -> str:
        """*target* in a message."""
        ...

    def capacity(self, target: str) -> int | None:
        """Bytes of *target*; None when unknown."""
        ...

    def watch(self, jobs: Sequence[FioJob], target: str, where: str) -> StallWatch | None:
        """The stall watch of *jobs* on *target*; None where none can be."""
        ...

    def hold(self, n: int) -> bool:
        """Hold gate *n* if its job waits there (False: it is not there yet)."""
        ...

    def tell(self, n: int, word: str) -> bool:
        """Write *word* to held gate *n* (False: its job left it: fio ended)."""
        ...

    def release(self, n: int) -> bool:
        """``go`` to gate *n* (False: its job left it)."""
        ...

    def ended(self, n: int, timeout: float) -> bool:
        """True once job *n* ended, within *timeout*."""
        ...

    def skip_all(self) -> None:
        """``skip`` to every held gate."""
        ...

    def close(self) -> None:
        """Let go of every gate (on a host: end the batch there)."""
        ...


@dataclass
class LocalGates:
    """A batch's gates here: FIFOs in its folder, held and written by this process."""

    folder: Path = Path()
    idle: bool = False
    _gates: dict[int, int] = field(default_factory=dict)
    _ends: dict[int, int] = field(default_factory=dict)

    #: the session checks the device before each release
    checks_device = False
    #: the counters are a file read away: watched from the release on
    watch_after = 0.0

    @property
    def machine(self) -> Machine:
        """This one: the FIFOs and fio processes are this process's."""
        return LOCAL

    def fio(self) -> str:
        return which("fio", FIO_INSTALL_HINT)

    def open(self, folder: Path, names: list[str]) -> None:
        self.folder = folder
        for name in names:
            (folder / name).unlink(missing_ok=True)
            os.mkfifo(folder / name, 0o600)
        self.idle = may_raise_priority()

    def put(self, relative: str, text: str) -> None:
        """The batch wrote it here already."""

    def jobfile(self, relative: str) -> str:
        return "fio.job"  # fio runs in its process's folder

    def prefix(self, relative: str) -> str:
        return "../" if relative else ""

    def spawn(self, relative: str, argv: list[str], artifacts: Path, *, idle: bool) -> FioProcess:
        return spawn(argv, artifacts=artifacts, name="fio", idle=idle)

    def where(self, target: str) -> str:
        return target

    def capacity(self, target: str) -> int | None:
        return capacity(self.machine, target)

    def watch(self, jobs: Sequence[FioJob], target: str, where: str) -> StallWatch | None:
        return stall_watch(self.machine, jobs, target, where)

    @property
    def held(self) -> bool:
        return bool(self._gates)

    def hold(self, n: int) -> bool:
        """Open gate *n* for writing if its job waits there (False: it is not there yet).

        The gate stays open (the job reads nothing until a word is written) until
        :meth:`tell` writes to it.
        """
        if n in self._gates:
            return True
        try:
            fd = os.open(self.folder / f"gate-{n}", os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: nobody reads yet (the job is not there)
                raise
            return False
        self._gates[n] = fd
        return True

    def tell(self, n: int, word: str) -> bool:
        """Write *word* to held gate *n* and close it (False: its job left it: fio ended)."""
        fd = self._gates.pop(n)
        try:
            os.write(fd, f"{word}\n".encode())
        except BrokenPipeError:
            return False
        finally:
            os.close(fd)
        return True

    def release(self, n: int) -> bool:
        """``go`` to gate *n*, its end FIFO opened first (the caller checked the device)."""
        # the end is a FIFO too: the wait blocks in select() instead of polling a file
        self._ends[n] = os.open(self.folder / f"done-{n}", os.O_RDONLY | os.O_NONBLOCK)
        return self.tell(n, "go")

    def ended(self, n: int, timeout: float) -> bool:
        """True once job *n* ended (its end FIFO), within *timeout*."""
        if not select.select([self._ends[n]], [], [], timeout)[0]:
            return False
        os.close(self._ends.pop(n))
        return True

    def skip_all(self) -> None:
        """``skip`` to every held gate: a job waiting in its prerun leaves without I/O."""
        for n, fd in list(self._gates.items()):
            with contextlib.suppress(OSError):
                os.write(fd, b"skip\n")
            os.close(fd)
            del self._gates[n]

    def close(self) -> None:
        self.skip_all()
        for fd in self._ends.values():
            os.close(fd)
        self._ends.clear()
