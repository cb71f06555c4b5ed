"""The node fio will really open for a ``--dut`` path, and the session's lock on it.

A user names a device any way the system offers (``/dev/disk/by-path/pci-0000:00:04.0``,
``/dev/disk/by-id/...``, a symlink of their own).  fio must never see that name: it
splits ``filename=`` on ``:``, cuts option values at ``;`` and ``#`` and expands
``$VARIABLES``, so a by-path name made fio create regular files named after its pieces.
:func:`canonical` resolves every path to one node: for a block device the kernel's own
``/dev/<name>`` of its device number (a ``mknod`` copy elsewhere becomes that node too),
for a file its real path.  The guard, the lock, fio and the report all use that node.

:class:`DeviceLock` is the "one session per device" rule: a BSD ``flock`` on the node
for the whole session, the convention udev and util-linux follow (``flock /dev/sdb``
and ``udevadm lock`` wait for it, and udev does not probe a device locked this way).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from pytest_ssd.device.openers import describe_pid, shown
from pytest_ssd.device.view import View
from pytest_ssd.errors import SafetyError
from pytest_ssd.machine.machine import LOCAL

PROC_LOCKS = Path("/proc/locks")


def canonical(path: Path, view: View | None = None) -> Path:
    """The node behind *path*: ``/dev/<kernel name>`` for a block device, else the real path.

    On *view*'s machine (default: this one).  Raises :class:`SafetyError` for control
    characters in the name (a newline in a job file starts a new fio option).  A path
    that does not exist resolves to itself; the guard refuses it.
    """
    text = str(path)
    if shown(text) != text:
        raise SafetyError(
            f"refusing --dut {shown(text)}: the path holds control characters; check it"
        )
    view = view or View.of(LOCAL, text)
    real = view.realpath(text)
    node = view.stat(real)
    if node is None or node.kind != "block":
        return Path(real)
    return Path(view.kernel_node(node.rdev) or real)


def device_key(path: Path) -> tuple[str, int, int]:
    """What makes two targets the same: the device number of a block device, else the inode."""
    return key_of(path.stat())


def lock_holders(st: os.stat_result) -> list[int]:
    """Pids /proc/locks names as holding a FLOCK on the inode *st* describes."""
    try:
        lines = PROC_LOCKS.read_text().splitlines()
    except OSError:
        return []
    return flock_holders(lines, st.st_dev, st.st_ino)


def flock_holders(lines: list[str], dev: int, ino: int) -> list[int]:
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
    return pids


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


class LockOpenError(SafetyError):
    """The node could not even be opened to lock it (a refusal of the kernel's, not a holder)."""


class DeviceLock:
    """An exclusive BSD ``flock`` on a device node (or file), held for the whole session.

    :meth:`claim` adds the exclusive claim of a session that writes: the block device
    held open ``O_EXCL``, so that the kernel refuses a mount, ``mkfs`` and every other
    exclusive opener (``EBUSY``) until the session ends.
    """

    def __init__(self, node: Path) -> None:
        self.node = node
        self._fd: int | None = None
        self._claim: int | None = None

    @property
    def key(self) -> tuple[str, int, int]:
        """:func:`device_key` of the device locked (of its open descriptor, not of its name)."""
        if self._fd is None:
            raise SafetyError(f"pytest-ssd internal error: {self.node} is not locked")
        return key_of(os.fstat(self._fd))

    @property
    def claimed(self) -> int | None:
        """The device number held ``O_EXCL``, else None."""
        return os.fstat(self._claim).st_rdev if self._claim is not None else None

    def claim(self) -> None:
        """Hold the block device ``O_EXCL`` (a file needs no claim); :class:`SafetyError` when
        the kernel says it is in use."""
        if self._claim is not None or self.key[0] != "block":
            return
        try:
            fd = os.open(self.node, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise SafetyError(in_use(str(self.node))) from None
            raise SafetyError(f"cannot claim {self.node}: {exc.strerror}") from None
        if key_of(os.fstat(fd)) != self.key:  # the node was re-made since it was locked
            os.close(fd)
            raise SafetyError(f"refusing to write to {self.node}: it changed while it was locked")
        self._claim = fd

    def acquire(self) -> None:
        """Take the lock or raise :class:`SafetyError` naming the session that holds it."""
        try:
            fd = os.open(self.node, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as exc:
            raise LockOpenError(f"cannot open {self.node} to lock it: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holders = [p for p in lock_holders(os.fstat(fd)) if p != os.getpid()]
            os.close(fd)
            raise SafetyError(locked(str(self.node), [describe_pid(p) for p in holders])) from None
        self._fd = fd

    def release(self) -> None:
        for fd in (self._claim, self._fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._claim = None
