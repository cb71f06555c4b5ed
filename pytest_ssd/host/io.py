"""How the host package touches the machine: file writes and nvme-cli, behind one protocol.

Tests pass their own :class:`Io` to emulate the kernel (a sysfs file that re-renders its
``[selected]`` entry) or nvme-cli (golden output), and point every path at a fake tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_ssd.device.nvme import INSTALL_HINT, NVME_TIMEOUT_S
from pytest_ssd.errors import SsdError
from pytest_ssd.proc import Completed, run, which


class TuneError(SsdError):
    """A host setting cannot be read, changed or put back."""


@dataclass(frozen=True)
class Roots:
    """Where the kernel's trees are; tests use fake ones under ``tmp_path``."""

    sysfs: Path = Path("/sys")
    procfs: Path = Path("/proc")


class Io(Protocol):
    """Writes a kernel attribute; runs nvme-cli."""

    def write(self, path: Path, value: str) -> None: ...

    def nvme(self, args: list[str]) -> Completed: ...


class SystemIo:
    """The real machine."""

    def write(self, path: Path, value: str) -> None:
        # one write() call, as echo does: sysfs takes the value from a single write; never
        # O_CREAT: a kernel attribute exists, and no other file is ever made
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)

    def nvme(self, args: list[str]) -> Completed:
        return run([which("nvme", INSTALL_HINT), *args], timeout=NVME_TIMEOUT_S)


def read_attribute(path: Path) -> str | None:
    """A kernel attribute, stripped; None when absent or unreadable."""
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None
