"""The session's lock on a test host's device: util-linux ``flock`` held over SSH.

The same BSD ``flock`` as :class:`~.node.DeviceLock` takes here, so a session
on the host itself, another controller and ``flock /dev/sdb`` all see it.  One
ssh channel runs ``flock -n -o NODE sh -c 'echo locked; exec cat'``: ``cat``
reads the channel, so the lock lasts until this process closes it, ends, or
loses the connection (the channel closes and ``cat`` sees the end of its input).
``-o`` keeps the lock's descriptor out of ``cat``: only ``flock`` itself holds
the node open, and :attr:`RemoteLock.pid` tells the guard it is ours.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from pytest_ssd.device.node import flock_holders, locked
from pytest_ssd.device.openers import describe
from pytest_ssd.device.remote import COMMANDS, sections
from pytest_ssd.errors import DeviceError, SafetyError, SsdError
from pytest_ssd.machine.ssh import MARK, Held, Ssh, check_missing, need

#: flock's exit code when the lock is held elsewhere (``-E``)
CONFLICT = 75
#: the node is not a block device or a file (flock would create a file there)
NOT_A_TARGET = 3
ACQUIRE_TIMEOUT_S = 30.0
RELEASE_TIMEOUT_S = 5.0
#: how long asking who holds the lock may take (after a timed-out acquisition: a slow host)
WHO_TIMEOUT_S = 10.0

#: ``sh -c HOLD sh NODE``
HOLD = f"""
{need("flock", "cat")}
[ -b "$1" ] || [ -f "$1" ] || exit {NOT_A_TARGET}
echo "{MARK}pid $$"
exec flock -n -o -E {CONFLICT} "$1" sh -c 'echo "{MARK}locked"; exec cat'
"""

#: ``sh -c WHO sh NODE``: the node's inode and the host's locks
WHO = f"""
echo "{MARK}inode"; stat -L -c '%d %i' -- "$1"
echo "{MARK}locks"; cat /proc/locks
"""


@dataclass
class RemoteLock:
    """An exclusive ``flock`` on *node* of the host *ssh* reaches, held for the session."""

    ssh: Ssh
    node: str
    #: where the holding channel keeps its output
    artifacts: Path
    _holder: Held | None = field(default=None, repr=False)
    pid: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`SafetyError` naming the process that holds it."""
        start = time.monotonic()
        held = self.ssh.hold(
            ["sh", "-c", HOLD, "sh", self.node],
            artifacts=self.artifacts,
            name="lock",
            ready="locked",
            timeout=ACQUIRE_TIMEOUT_S,
        )
        if not isinstance(held, Held):
            check_missing(held, self.ssh.where)
            if time.monotonic() - start >= ACQUIRE_TIMEOUT_S:
                self._timed_out()
            self._refuse(held.returncode, held.last_error_line())
        self._holder = held
        self.pid = int(held.marks["pid"])

    def _refuse(self, returncode: int, said: str) -> NoReturn:
        where = f"{self.ssh.where}: {self.node}"
        if returncode == NOT_A_TARGET:
            raise SafetyError(f"refusing {where}: it is not a block device or a file there")
        if returncode != CONFLICT:
            raise DeviceError(f"cannot lock {where}: {said or f'exit code {returncode}'}")
        raise SafetyError(locked(where, self._holders(timeout=60)))

    def _timed_out(self) -> NoReturn:
        who: list[str] = []
        with contextlib.suppress(SsdError):  # the host that did not answer may not answer this
            who = self._holders(timeout=WHO_TIMEOUT_S)
        why = "nobody holds it there: the host is slow to answer"
        if who:
            why = f"held by {', '.join(who)}"
        raise DeviceError(
            f"timed out waiting for the lock on {self.node} on {self.ssh.where}"
            f" after {ACQUIRE_TIMEOUT_S:g} s ({why})"
        )

    def _holders(self, timeout: float) -> list[str]:
        """The processes /proc/locks on the host names as holding a flock on the node."""
        found = sections(self.ssh.run(["sh", "-c", WHO, "sh", self.node], timeout=timeout).stdout)
        dev, _, ino = " ".join(found.get("inode", [])).partition(" ")
        pids = flock_holders(found.get("locks", []), int(dev), int(ino)) if ino else []
        commands = sections(
            self.ssh.run(["sh", "-c", COMMANDS, "sh", *map(str, pids)], timeout=timeout).stdout
        )
        return [describe(p, " ".join(commands.get(f"pid {p}", []))) for p in pids]

    def release(self) -> None:
        """Close the channel: ``cat`` ends, ``flock`` unlocks and exits."""
        if self._holder is not None:
            holder, self._holder = self._holder, None
            holder.close(RELEASE_TIMEOUT_S)
