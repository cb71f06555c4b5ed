"""How the host package touches the machine: file writes and nvme-cli, behind one protocol.

Tests pass their own :class:`Io` to emulate the kernel (a sysfs file that re-renders its
``[selected]`` entry) or nvme-cli (golden output), and point every path at a fake tree.
"""

from __future__ import annotations

import os
import stat
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
    #: device nodes (the NVMe device APST is set on)
    dev: Path = Path("/dev")

    def holds(self, path: Path | str) -> bool:
        """*path*, symlinks resolved, is in the sysfs or procfs tree (no other file is written)."""
        try:
            real = Path(os.path.realpath(path))
        except OSError:  # a link it may not follow (/proc/1/root): not one of ours
            return False
        return any(real.is_relative_to(os.path.realpath(r)) for r in (self.sysfs, self.procfs))


class Io(Protocol):
    """Writes a kernel attribute; runs nvme-cli."""

    def write(self, path: Path, value: str) -> None: ...

    def nvme(self, args: list[str]) -> Completed: ...


class SystemIo:
    """The real machine: writes only existing files of the sysfs and procfs trees."""

    def __init__(self, roots: Roots | None = None) -> None:
        self.roots = roots or Roots()

    def write(self, path: Path, value: str) -> None:
        if not self.roots.holds(path):
            raise TuneError(
                f"refusing to write {path}: not under {self.roots.sysfs} or {self.roots.procfs}"
            )
        # never O_CREAT: a kernel attribute exists, and no other file is ever made;
        # O_NONBLOCK: a FIFO put in the way does not hang the session
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            # what was opened, not what the name said a moment ago (a symlink swapped in)
            opened = f"/proc/self/fd/{fd}"
            if not stat.S_ISREG(os.fstat(fd).st_mode) or not self.roots.holds(opened):
                raise TuneError(f"refusing to write {path}: not a kernel attribute")
            # one write() call, as echo does: sysfs takes the value from a single write
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
