"""This machine read the way a test host is: by commands, a device by its ``/dev`` name."""

from __future__ import annotations

from pytest_ssd.machine.machine import LocalMachine, Machine


class Shell(LocalMachine):
    """:class:`Machine`'s own readers (a shell's glob, ``cat``, ``stat``), run here."""

    block_name = Machine.block_name
    file_size = Machine.file_size
    glob = Machine.glob
    poll_s = Machine.poll_s

    def read(self, path: str) -> str | None:
        done = self.run(["cat", "--", path], timeout=5)
        return done.stdout if done.returncode == 0 else None
