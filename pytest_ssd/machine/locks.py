"""The one holder of a session's locks and claims on a machine's device nodes.

A device is locked with a BSD ``flock`` on its node for the whole session, the
convention udev and util-linux follow (``flock /dev/sdb`` and ``udevadm lock`` wait for
it, and udev does not probe a device locked this way); a session that writes also holds
the block device open ``O_EXCL`` (its claim: the kernel then refuses a mount, ``mkfs``
and every other exclusive opener).  One process of the machine holds them all
(:class:`NodeLocks`): this process here (:class:`HereLocks`: an ``open(2)`` each, no
program), a small lock process on a test host (:mod:`.hostlocks`).  Each answers with
an :class:`Answer`; :class:`~pytest_ssd.device.node.DeviceLock` tells the user.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.machine.facts import command_here

PROC_LOCKS = Path("/proc/locks")


@dataclass(frozen=True)
class Answer:
    """The holder's answer about a node.

    ``lock``: ``locked`` (*rest*: the key of what is held, ``block MAJOR MINOR`` or ``file
    DEV INO``, when known), ``conflict`` (held elsewhere), ``notarget`` (not a block
    device or a file), ``unopened`` (the node cannot be opened: *rest* says why) or
    ``error`` (the holder failed: *rest*).  ``claim``: ``claimed``, ``unclaimed`` (*rest*:
    the kernel's refusal), ``changed`` (the node names another device than the one
    locked), ``refused`` (the holder cannot claim there: *rest* says why) or ``error``.
    """

    word: str
    rest: str = ""
    #: the process holding the lock there (the guard's "ours")
    pid: int | None = None


def key_text(st: os.stat_result) -> str:
    """What makes two targets the same, as :class:`Answer` tells it."""
    if stat.S_ISBLK(st.st_mode):
        return f"block {os.major(st.st_rdev)} {os.minor(st.st_rdev)}"
    return f"file {st.st_dev} {st.st_ino}"


def flock_holders(lines: Iterable[str], dev: int, ino: int) -> list[int]:
    """Pids the lines of /proc/locks name as holding a FLOCK on inode *ino* of device *dev*."""
    inode = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    pids = []
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 00:05:18 0 EOF"; blocked waiters carry "->"
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        if fields[5] == inode and fields[4].isdigit():
            pids.append(int(fields[4]))
    return list(dict.fromkeys(pids))  # a holder once, however many lines name it


def lock_holders(st: os.stat_result) -> list[int]:
    """Pids this machine's /proc/locks names as holding a FLOCK on the inode *st* describes."""
    try:
        lines = PROC_LOCKS.read_text().splitlines()
    except OSError:
        return []
    return flock_holders(lines, st.st_dev, st.st_ino)


class NodeLocks(ABC):
    """The process holding the session's locks and claims on one machine's nodes."""

    @property
    def where(self) -> str:
        """The machine in a message ("" for this one)."""
        return ""

    @abstractmethod
    def lock(self, node: str) -> Answer:
        """Take the ``flock`` of *node* (the lock of a node held already: ``locked``)."""

    def claim_ahead(self, node: str) -> None:  # noqa: B027 - nothing to send ahead here
        """Send the claim of *node* that :meth:`claim` then waits for, where asking costs a
        round trip (a test host's drives: one for all)."""

    @abstractmethod
    def claim(self, node: str) -> Answer:
        """Hold *node*, locked, ``O_EXCL`` as well (a regular file needs no claim)."""

    @abstractmethod
    def release(self, node: str) -> None:
        """Let *node*'s lock and claim go."""

    @abstractmethod
    def holders(self, node: str) -> dict[int, str]:
        """The processes (pid: command line) holding a ``flock`` on *node* there."""

    @abstractmethod
    def close(self) -> None:
        """Let every lock and claim go."""


@dataclass
class HereLocks(NodeLocks):
    """This process holds the locks of this machine's nodes: a descriptor each."""

    _locks: dict[str, int] = field(default_factory=dict, repr=False)
    _claims: dict[str, int] = field(default_factory=dict, repr=False)

    def lock(self, node: str) -> Answer:
        if node in self._locks:
            return Answer("locked", key_text(os.fstat(self._locks[node])), os.getpid())
        try:
            fd = os.open(node, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as exc:
            return Answer("unopened", exc.strerror or str(exc))
        st = os.fstat(fd)
        if not (stat.S_ISBLK(st.st_mode) or stat.S_ISREG(st.st_mode)):
            os.close(fd)
            return Answer("notarget")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return Answer("conflict")
        self._locks[node] = fd
        return Answer("locked", key_text(st), os.getpid())

    def claim(self, node: str) -> Answer:
        held = self._locks.get(node)
        if held is None:
            return Answer("unclaimed", "it is not locked")
        locked = os.fstat(held)
        if node in self._claims or not stat.S_ISBLK(locked.st_mode):
            return Answer("claimed")
        try:
            fd = os.open(node, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as exc:
            busy = exc.errno == errno.EBUSY
            return Answer("unclaimed", os.strerror(errno.EBUSY) if busy else exc.strerror or "")
        if key_text(os.fstat(fd)) != key_text(locked):  # the node was re-made since it was locked
            os.close(fd)
            return Answer("changed")
        self._claims[node] = fd
        return Answer("claimed")

    def release(self, node: str) -> None:
        for held in (self._claims, self._locks):
            fd = held.pop(node, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def holders(self, node: str) -> dict[int, str]:
        try:
            st = Path(node).stat()
        except OSError:
            return {}
        pids = [pid for pid in lock_holders(st) if pid != os.getpid()]
        return {pid: command_here(pid) for pid in pids}

    def close(self) -> None:
        for node in list(self._locks):
            self.release(node)
