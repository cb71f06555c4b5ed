"""How many channels every process of a session may open at once on one host's connection.

sshd's ``MaxSessions`` (10 by default) counts the session channels of a
connection, whichever process asked for them: the controller and every xdist
worker multiplex over the controller's one master connection.  A budget held
in one process would let 16 workers open 16 times as many, so the budget is
a folder every process of the session shares: :class:`Slots` hands out one of
its *count* slot files, each an exclusive ``flock`` held while the channel
runs.  The kernel lets a slot go when its holder ends (``kill -9`` too), and
threads of one process take turns the same way (:mod:`.filelock`: each attempt
opens the file anew).

Forwarded sockets (``ssh -O forward``, ``ssh -W``) are channels sshd does not
count against ``MaxSessions`` (only shell, command and subsystem sessions):
what must last the session goes there (:mod:`.agent`), outside the budget.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.machine.filelock import let_go, try_lock

#: how long a process waits before it tries the slots again, all being taken
RETRY_S = 0.01


@dataclass(frozen=True)
class Slots:
    """*count* slots in *folder*: at most that many holders at once across processes."""

    folder: Path
    count: int

    def prepare(self) -> None:
        """Make the folder and its slot files (the owner of the connection does, once)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for n in range(self.count):
            (self.folder / str(n)).touch()

    def _try(self, n: int) -> int | None:
        """Slot *n*'s file, locked for the caller (None: another holds it)."""
        return try_lock(self.folder / str(n))

    def _wait(self) -> tuple[int, int]:
        """A free slot's number and its locked file, trying them in turn until one is."""
        first = os.getpid() + time.monotonic_ns()  # holders spread over the slots
        tried = 0
        while True:
            n = (first + tried) % self.count
            fd = self._try(n)
            if fd is not None:
                return n, fd
            tried += 1
            if tried % self.count == 0:  # all taken: wait a little
                time.sleep(RETRY_S)

    @contextlib.contextmanager
    def take(self) -> Iterator[int]:
        """Hold a slot (waiting for one) while the block runs; its number."""
        n, fd = self._wait()
        try:
            yield n
        finally:
            let_go(fd)
