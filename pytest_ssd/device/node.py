"""The node fio will really open for a ``--dut`` path, and the session's lock on it.

A user names a device any way the system offers (``/dev/disk/by-path/pci-0000:00:04.0``,
``/dev/disk/by-id/...``, a symlink of their own).  fio must never see that name: it
splits ``filename=`` on ``:``, cuts option values at ``;`` and ``#`` and expands
``$VARIABLES``, so a by-path name made fio create regular files named after its pieces.
:func:`canonical` resolves every path to one node: for a block device the kernel's own
``/dev/<name>`` of its device number (a ``mknod`` copy elsewhere becomes that node too),
for a file its real path.  The guard, the lock, fio and the report all use that node.

:class:`DeviceLock` is the "one session per device" rule on any machine: a BSD
``flock`` on the node for the whole session, taken through the machine's lock holder
(:class:`~pytest_ssd.machine.locks.NodeLocks`: this process here, one lock process on
a test host) and, for a session that writes, an ``O_EXCL`` claim; what the holder
answers is told here in one line, the same way for every machine.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.openers import describe, shown
from pytest_ssd.device.view import View
from pytest_ssd.errors import DeviceError, SafetyError
from pytest_ssd.machine.locks import NodeLocks, flock_holders, lock_holders

__all__ = [
    "DeviceLock",
    "LockOpenError",
    "canonical",
    "device_key",
    "flock_holders",
    "in_use",
    "key_of",
    "lock_holders",
    "locked",
]


def canonical(path: Path, view: View) -> Path:
    """The node behind *path*: ``/dev/<kernel name>`` for a block device, else the real path.

    On *view*'s machine.  Raises :class:`SafetyError` for control
    characters in the name (a newline in a job file starts a new fio option).  A path
    that does not exist resolves to itself; the guard refuses it.
    """
    text = str(path)
    if shown(text) != text:
        raise SafetyError(
            f"refusing --dut {shown(text)}: the path holds control characters; check it"
        )
    real = view.realpath(text)
    node = view.stat(real)
    if node is None or node.kind != "block":
        return Path(real)
    return Path(view.kernel_node(node.rdev) or real)


def device_key(path: Path) -> tuple[str, int, int]:
    """What makes two targets the same: the device number of a block device, else the inode."""
    return key_of(path.stat())


def locked(node: str, holders: list[str]) -> str:
    """The one line refusing a device another session holds."""
    who = ", ".join(holders) or "another process"
    return (
        f"refusing {node}: it is locked by {who}, another pytest-ssd session or a"
        " tool using 'flock' (one session per device); wait for it to finish"
    )


def key_of(st: os.stat_result) -> tuple[str, int, int]:
    """:func:`device_key` of what *st* describes."""
    if stat.S_ISBLK(st.st_mode):
        return ("block", os.major(st.st_rdev), os.minor(st.st_rdev))
    return ("file", st.st_dev, st.st_ino)


def in_use(node: str, where: str = "") -> str:
    """The one line refusing a device an exclusive claim on failed (mounted, held, claimed)."""
    on = f" on {where}" if where else ""
    return (
        f"refusing to write to {node}{on}: it is in use (an exclusive open failed: mounted,"
        " held by a holder or opened exclusively by another program); release it first"
        " or use --ssd-readonly"
    )


#: what makes two targets the same device (:func:`device_key`)
Key = tuple[str, int, int]


class LockOpenError(SafetyError):
    """The node could not even be opened to lock it (a refusal of the kernel's, not a holder)."""


def parse_key(text: str) -> Key | None:
    """The key a holder's ``locked`` answer gives (``block 7 3``, ``file 2049 1234``)."""
    kind, *numbers = text.split()
    if kind not in ("block", "file") or len(numbers) != 2 or not all(n.isdigit() for n in numbers):
        return None
    return (kind, int(numbers[0]), int(numbers[1]))


@dataclass
class DeviceLock:
    """An exclusive ``flock`` on *node* of the machine whose holder is *locks*, for the session.

    *pid*: the process holding it there (the guard's "ours"; None: not held); *key*: what
    the holder opened, a block device's number, else the file's inode (None: unknown).
    """

    locks: NodeLocks
    node: str
    pid: int | None = None
    key: Key | None = None
    _claimed: bool = field(default=False, repr=False)

    @property
    def _on(self) -> str:
        return f" on {self.locks.where}" if self.locks.where else ""

    def acquire(self) -> None:
        """Take the lock or raise :class:`SafetyError` naming the process that holds it."""
        answer = self.locks.lock(self.node)
        where = f"{self.locks.where}: {self.node}" if self.locks.where else self.node
        if answer.word == "locked":
            self.pid, self.key = answer.pid, parse_key(answer.rest)
            return
        if answer.word == "notarget":
            raise SafetyError(f"refusing {where}: it is not a block device or a file there")
        if answer.word == "unopened":
            raise LockOpenError(f"cannot open {self.node}{self._on} to lock it: {answer.rest}")
        if answer.word != "conflict":
            raise DeviceError(f"cannot lock {where}: {answer.rest}")
        holders = self.locks.holders(self.node)
        raise SafetyError(locked(where, [describe(p, c) for p, c in holders.items()]))

    def claim_ahead(self) -> None:
        """Send the claim :meth:`claim` then waits for (the device is guarded already)."""
        if not self._claimed and self.pid is not None:
            self.locks.claim_ahead(self.node)

    def claim(self) -> None:
        """Hold the block device ``O_EXCL`` (a file needs no claim) for the session, or raise
        :class:`SafetyError` when the kernel says it is in use."""
        if self._claimed or self.pid is None:
            return
        answer = self.locks.claim(self.node)
        if answer.word == "claimed":
            self._claimed = True
        elif answer.word == "unclaimed" and "busy" in answer.rest.lower():
            raise SafetyError(in_use(self.node, self.locks.where))
        elif answer.word == "unclaimed":
            raise SafetyError(f"cannot claim {self.node}{self._on}: {answer.rest}")
        elif answer.word == "changed":
            raise SafetyError(
                f"refusing to write to {self.node}{self._on}: it changed while it was locked"
            )
        elif answer.word == "refused":
            raise SafetyError(
                f"refusing to write to {self.node}{self._on}: {answer.rest} or use --ssd-readonly"
            )
        else:
            raise DeviceError(f"cannot claim {self.node}{self._on}: {answer.rest}")

    def release(self) -> None:
        """Let the lock and claim go (idempotent)."""
        if self.pid is not None:
            self.locks.release(self.node)
        self.pid, self._claimed = None, False
