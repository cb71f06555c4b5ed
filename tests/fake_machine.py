"""The unit tests' one fake machine: a test host by name, built on the :class:`Machine` ABC
(a method the interface gains is missing here at once, in every test that uses it).

By default every program is installed there, every command exits 0 with no output and no
file reads.  ``here=True`` makes it this machine under a host's name: its commands, programs
and files are this machine's (what a host that is this one gives).  A test that needs one
answer of its own subclasses it and overrides that method only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ssd.errors import ToolError
from pytest_ssd.fio.runners import ChildFio
from pytest_ssd.machine.machine import LOCAL, Machine, Place
from pytest_ssd.proc import Completed


@dataclass
class FakeMachine(Machine):
    """The test host *name* (``ssh root@NAME``)."""

    name: str = "lab7"
    #: this machine under the host's name: commands run here, files read here
    here: bool = False
    #: programs not installed there
    missing: frozenset[str] = frozenset()
    place: Place = "host"

    @property
    def where(self) -> str:
        return f"ssh root@{self.name}"

    @property
    def host(self) -> str | None:
        return self.name

    def run(self, argv: Sequence[str], **options: Any) -> Completed:
        if self.here:
            return LOCAL.run(argv, **options)
        return Completed(tuple(argv), 0, "", "", 0.0)

    def which(self, program: str, install_hint: str) -> str:
        if program in self.missing:
            raise ToolError(f"{program} is not installed on {self.where}: {install_hint}")
        return LOCAL.which(program, install_hint) if self.here else f"/usr/bin/{program}"

    def read(self, path: str) -> str | None:
        return LOCAL.read(path) if self.here else None


#: fio as a child process of this machine (the runner of a local device's site)
HERE = ChildFio(LOCAL)
