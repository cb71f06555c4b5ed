"""An exclusive BSD ``flock`` on a file of this machine, taken in this process.

The one way pytest-ssd locks a file here: the scratch registry's entries
(:mod:`pytest_ssd.device.scratch`), the channel budget's slots (:mod:`.slots`) and this
machine's state folder (:mod:`.statefolder`: the tune lock).  The file is created 0600
and never opened through a symlink; the lock is never waited for (``LOCK_NB``): taken,
or held by another.  A ``flock`` belongs to an open file, not to a process: each attempt
opens the file anew, so two holders in one process (threads) exclude each other too,
and the kernel lets the lock go when its last descriptor closes (its holder ends,
``kill -9`` too).  A test host's file is locked the same way by util-linux ``flock``
there, held by a command (:class:`~pytest_ssd.machine.flock.HostFlock`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


def try_lock(path: Path) -> int | None:
    """*path* (created 0600, never through a symlink) opened and locked: its descriptor,
    the lock held until it is closed; None when another holder has it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def let_go(fd: int) -> None:
    """Close a descriptor :func:`try_lock` gave: the lock goes with it."""
    with contextlib.suppress(OSError):
        os.close(fd)


class FileLock:
    """An exclusive, non-blocking ``flock`` on *path* (:func:`try_lock`), held until released."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False (nothing held) when another holder has it."""
        if self._fd is None:
            self._fd = try_lock(self.path)
        return self._fd is not None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let the lock go (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            let_go(fd)
