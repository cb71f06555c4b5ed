"""An exclusive ``flock`` on a test host's file, held by a command there for as long as it runs.

A test host's side of a file lock (this machine's is taken in this process:
:mod:`.filelock`), the one protocol every lock there without a lock process of its own
uses (a device's lock on a host without perl, :mod:`pytest_ssd.machine.hostlocks`; the
host's tune lock, :mod:`.statefolder`): util-linux ``flock -n -o`` on the file, running
``cat`` on the command's input (an SSH channel's).  The lock lasts
until this process closes the channel, ends, or loses the connection: ``cat`` reads the
end of its input, ``flock`` exits and the kernel lets the lock go.  The holder is
``flock`` itself (what ``/proc/locks`` names); its pid and start time there are printed
before ``locked``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_ssd.machine.ssh import MARK, Held
from pytest_ssd.proc.runner import Completed

#: flock's exit code when the lock is held elsewhere (``-E``)
CONFLICT = 75
RELEASE_TIMEOUT_S = 5.0


def hold_script(target: str, then: str = "") -> str:
    """``sh`` text that ends by holding the lock on *target* (a shell word: ``"$1"``).

    *then*: ``sh`` text (no single quote) the holder runs once the lock is taken, before
    it says ``locked``.
    """
    return f"""
exec flock -n -o -E {CONFLICT} {target} sh -c '
set -- $(cut -d")" -f2- /proc/$PPID/stat)
echo "{MARK}pid $PPID"; echo "{MARK}started ${{20}}";{then} echo "{MARK}locked"; exec cat'
"""


class Holds(Protocol):
    """What holds a command: an :class:`~pytest_ssd.machine.ssh.Ssh` or any machine."""

    def hold(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed: ...


@dataclass
class HostFlock:
    """The lock ``sh -c SCRIPT sh ARGS...`` takes on a host (SCRIPT ends in :func:`hold_script`)."""

    ssh: Holds
    script: str
    args: tuple[str, ...] = ()
    #: where the holding channel keeps its output, and its name there
    artifacts: Path = Path()
    name: str = "flock"
    held: Held | None = field(default=None, repr=False)

    def acquire(self, timeout: float) -> Completed | None:
        """Take the lock; None when held, else how the script ended (:data:`CONFLICT`: taken)."""
        self.artifacts.mkdir(parents=True, exist_ok=True)
        found = self.ssh.hold(
            ["sh", "-c", self.script, "sh", *self.args],
            artifacts=self.artifacts,
            name=self.name,
            ready="locked",
            timeout=timeout,
        )
        if isinstance(found, Held):
            self.held = found
            return None
        return found

    @property
    def marks(self) -> dict[str, str]:
        """What the script printed up to ``locked`` (``pid``, ``started``, its own marks)."""
        return self.held.marks if self.held is not None else {}

    def release(self) -> None:
        """Close the channel: the lock goes with it (idempotent)."""
        if self.held is not None:
            held, self.held = self.held, None
            held.close(RELEASE_TIMEOUT_S)
