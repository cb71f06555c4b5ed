"""How the host package touches a machine: file writes and nvme-cli, behind one protocol.

Tests pass their own :class:`Io` to emulate the kernel (a sysfs file that re-renders its
``[selected]`` entry) or nvme-cli (golden output), and point every path at a fake tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_ssd.device.nvme import INSTALL_HINT, NVME_TIMEOUT_S
from pytest_ssd.errors import SsdError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.proc import Completed


class TuneError(SsdError):
    """A host setting cannot be read, changed or put back."""


@dataclass(frozen=True)
class Roots:
    """Where the kernel's trees are; tests use fake ones under ``tmp_path``."""

    sysfs: Path = Path("/sys")
    procfs: Path = Path("/proc")
    #: device nodes (the NVMe device APST is set on)
    dev: Path = Path("/dev")


class Io(Protocol):
    """Writes a kernel attribute; runs nvme-cli."""

    def write(self, path: Path, value: str) -> None: ...

    def nvme(self, args: list[str]) -> Completed: ...


#: ``sh -c UPLOAD sh OCTAL NVME ARGS...``: the buffer (every byte ``\\ooo``) to a private
#: temporary file there, given to nvme-cli as ``--data``, removed afterwards
UPLOAD = """
t=$(mktemp) || exit 3
printf "$1" > "$t" || { rm -f "$t"; exit 3; }
shift
"$@" "--data=$t"; r=$?
rm -f "$t"
exit $r
"""
DATA = "--data="


@dataclass(frozen=True)
class MachineIo:
    """A machine's kernel attributes and nvme-cli, this one or a test host alike."""

    machine: Machine

    def write(self, path: Path, value: str) -> None:
        """An existing regular file of /sys or /proc there (:meth:`Machine.write_attribute`)."""
        self.machine.write_attribute(str(path), value)

    def nvme(self, args: list[str]) -> Completed:
        """nvme-cli there; a ``--data=FILE`` of this process goes along, to a temporary file."""
        nvme = self.machine.which("nvme", INSTALL_HINT)
        data = [a for a in args if a.startswith(DATA)]
        if not data:
            return self.machine.run([nvme, *args], timeout=NVME_TIMEOUT_S, name="nvme")
        payload = Path(data[0].removeprefix(DATA)).read_bytes()
        octal = "".join(f"\\{byte:03o}" for byte in payload)
        rest = [a for a in args if not a.startswith(DATA)]
        argv = ["sh", "-c", UPLOAD, "sh", octal, nvme, *rest]
        return self.machine.run(argv, timeout=NVME_TIMEOUT_S, name="nvme")


def read_attribute(path: Path) -> str | None:
    """A kernel attribute, stripped; None when absent or unreadable."""
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None
