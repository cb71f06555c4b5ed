"""What a machine's kernel says about its block devices: the facts the guard judges.

A :class:`Facts` is one look at a machine: what ``stat`` says of a path (:class:`Node`,
symlinks followed), every block device's sysfs entry (:class:`Block`), the mounts, the
swap areas, who holds what open and the probes of a device.  The machine takes it
(:meth:`~pytest_ssd.machine.machine.Machine.facts`): this one reads ``/sys/class/block``,
``/proc`` and ``/dev`` in place as it is asked (:class:`HereFacts`); a test host is read
in one snapshot over SSH (:mod:`.hostfacts`: a command there costs about 0.1 s).  The
device's :class:`~pytest_ssd.device.view.View` reads either the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.documents import loads_json
from pytest_ssd.proc.runner import run, which

SYS_BLOCK = Path("/sys/class/block")
MOUNTINFO = Path("/proc/self/mountinfo")
SWAPS = Path("/proc/swaps")
PROC = Path("/proc")
PROBE_TIMEOUT_S = 60.0
WIPEFS_HINT = "install util-linux"
_DEVNAME = re.compile(r"^DEVNAME=(.+)$", re.MULTILINE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown(text: str) -> str:
    """*text* on one line: control characters as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def describe(pid: int, command: str) -> str:
    """'pid 1234 (pytest suites/smoke --dut=/dev/loop3)', shortened to one readable line."""
    command = shown(command.strip())
    if len(command) > 120:
        command = command[:117] + "..."
    return f"pid {pid} ({command})" if command else f"pid {pid}"


@dataclass(frozen=True)
class Node:
    """What ``stat`` says of a path, symlinks followed."""

    kind: str  # "block", "file" or "other"
    rdev: int
    dev: int
    ino: int

    @classmethod
    def of_mode(cls, mode: int, rdev: int, dev: int, ino: int) -> Node:
        kind = "block" if stat.S_ISBLK(mode) else "file" if stat.S_ISREG(mode) else "other"
        return cls(kind, rdev if kind == "block" else 0, dev, ino)

    def same(self, other: Node | None) -> bool:
        """Both name one target: the same block device number, else the same inode."""
        if other is None:
            return False
        if self.kind == "block" and other.kind == "block":
            return self.rdev == other.rdev
        return (self.dev, self.ino) == (other.dev, other.ino)


@dataclass(frozen=True)
class Block:
    """A block device's sysfs entry (``/sys/class/block/<name>``)."""

    name: str
    dev: int
    #: the whole disk of a partition, else None
    disk: str | None = None
    holders: tuple[str, ...] = ()
    slaves: tuple[str, ...] = ()
    #: a loop device's backing file as the kernel shows it (may end in " (deleted)")
    backing_file: str | None = None
    #: DEVNAME of its uevent: its node is ``/dev/<devname>``
    devname: str | None = None


def parse_dev(text: str) -> int | None:
    """``"259:0"`` (a sysfs ``dev`` file) as a device number, or None."""
    major, _, minor = text.strip().partition(":")
    try:
        return os.makedev(int(major), int(minor))
    except ValueError:
        return None


def devname(uevent: str) -> str | None:
    found = _DEVNAME.search(uevent)
    return found.group(1).strip() if found else None


def signatures_of(returncode: int, stdout: str, error: str) -> tuple[tuple[str, ...], str | None]:
    """Signature types from ``wipefs --no-act --json``'s exit code and output, or why none."""
    if returncode != 0:
        return (), f"wipefs failed: {error}"
    if not stdout.strip():  # some wipefs versions print nothing when nothing is found
        return (), None
    try:
        found = loads_json(stdout).get("signatures", [])
        return tuple(dict.fromkeys(str(sig["type"]) for sig in found)), None
    except (ValueError, AttributeError, KeyError, TypeError):
        return (), "wipefs printed JSON this guard does not understand"


class Facts(ABC):
    """The block-device facts of one machine, as of one look."""

    @property
    def where(self) -> str:
        """Where the facts come from, for messages ("" on this machine)."""
        return ""

    @abstractmethod
    def stat(self, path: str) -> Node | None:
        """``stat`` of *path*, symlinks followed; None when it cannot be reached."""

    @abstractmethod
    def realpath(self, path: str) -> str:
        """*path* with every symlink resolved (itself when it does not exist)."""

    @abstractmethod
    def blocks(self) -> Mapping[str, Block]:
        """Every block device by kernel name."""

    @abstractmethod
    def mountinfo(self) -> list[str]:
        """The lines of ``/proc/self/mountinfo``."""

    @abstractmethod
    def swaps(self) -> list[str]:
        """The lines of ``/proc/swaps`` (its heading included)."""

    @abstractmethod
    def holding(self, devices: set[int], files: set[tuple[int, int]], again: bool) -> set[int]:
        """Pids (not pytest-ssd's own) holding one of *devices* or *files* open: as of the
        look, or (*again*) now."""

    @abstractmethod
    def commands(self, pids: Iterable[int]) -> dict[int, str]:
        """Each process's command line ("" when it is gone)."""

    @abstractmethod
    def exclusive_open(self, path: str) -> tuple[bool, str | None]:
        """(busy, error) of an exclusive open of block device *path*, closed at once."""

    @abstractmethod
    def signatures(self, path: str) -> tuple[tuple[str, ...], str | None]:
        """Filesystem, partition-table, RAID, LVM and swap signatures on *path*, or why not."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _names(folder: Path) -> tuple[str, ...]:
    try:
        return tuple(sorted(entry.name for entry in folder.iterdir()))
    except OSError:
        return ()


def block_here(entry: Path) -> Block | None:
    """The :class:`Block` of ``/sys/class/block/<name>`` on this machine (None: it is gone)."""
    dev = parse_dev(_read(entry / "dev") or "")
    if dev is None:
        return None
    backing = _read(entry / "loop" / "backing_file")
    return Block(
        name=entry.name,
        dev=dev,
        disk=entry.resolve().parent.name if (entry / "partition").is_file() else None,
        holders=_names(entry / "holders"),
        slaves=_names(entry / "slaves"),
        backing_file=backing.rstrip("\n") if backing is not None else None,
        devname=devname(_read(entry / "uevent") or ""),
    )


def command_here(pid: int) -> str:
    """The command line of process *pid* of this machine ("" when it is gone)."""
    try:
        argv = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return " ".join(a.decode(errors="replace") for a in argv if a)


def ancestors(pid: int | None = None) -> set[int]:
    """*pid* (default: this process) and every process above it."""
    found: set[int] = set()
    current = pid or os.getpid()
    while current > 0 and current not in found:
        found.add(current)
        try:
            text = (PROC / str(current) / "stat").read_text()
        except OSError:
            break
        current = int(text.rpartition(")")[2].split()[1])  # field 4: the parent
    return found


def _matches(st: os.stat_result, devices: set[int], files: set[tuple[int, int]]) -> bool:
    if stat.S_ISBLK(st.st_mode):
        return st.st_rdev in devices
    return (st.st_dev, st.st_ino) in files


def _open_in(pid: Path, devices: set[int], files: set[tuple[int, int]]) -> bool:
    try:
        fds = list((pid / "fd").iterdir())
    except OSError:  # gone, or not ours to read
        return False
    for fd in fds:
        try:
            if _matches(fd.stat(), devices, files):
                return True
        except OSError:
            continue
    return bool(files) and _mapped_in(pid, files)


def _mapped_in(pid: Path, files: set[tuple[int, int]]) -> bool:
    try:
        lines = (pid / "maps").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 5 or fields[4] == "0":
            continue
        major, _, minor = fields[3].partition(":")
        try:
            key = (os.makedev(int(major, 16), int(minor, 16)), int(fields[4]))
        except ValueError:
            continue
        if key in files:
            return True
    return False


def scan(devices: Iterable[int], files: Iterable[tuple[int, int]] = ()) -> set[int]:
    """Pids of this machine (not this process or its ancestors: pytest-ssd's own, the
    session's locks with them) with one of *devices* or *files* open now, as ``fuser``
    finds them: every process's descriptors and mapped files."""
    wanted, mapped = set(devices), set(files)
    ours = ancestors()
    found = set()
    for entry in PROC.iterdir():
        if entry.name.isdigit() and int(entry.name) not in ours and _open_in(entry, wanted, mapped):
            found.add(int(entry.name))
    return found


@dataclass
class HereFacts(Facts):
    """This machine's facts, read in place as they are asked for (sysfs once per look)."""

    _blocks: dict[str, Block] | None = field(default=None, repr=False)

    def stat(self, path: str) -> Node | None:
        try:
            st = Path(path).stat()
        except (OSError, ValueError):
            return None
        return Node.of_mode(st.st_mode, st.st_rdev, st.st_dev, st.st_ino)

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def blocks(self) -> Mapping[str, Block]:
        if self._blocks is None:
            found = (block_here(entry) for entry in sorted(SYS_BLOCK.iterdir()))
            self._blocks = {b.name: b for b in found if b is not None}
        return self._blocks

    def mountinfo(self) -> list[str]:
        return MOUNTINFO.read_text().splitlines()

    def swaps(self) -> list[str]:
        return SWAPS.read_text().splitlines()

    def holding(self, devices: set[int], files: set[tuple[int, int]], again: bool) -> set[int]:
        return scan(devices, files)  # read as it is asked: the first scan is of now too

    def commands(self, pids: Iterable[int]) -> dict[int, str]:
        return {pid: command_here(pid) for pid in pids}

    def exclusive_open(self, path: str) -> tuple[bool, str | None]:
        """EBUSY means mounted, held by a holder or opened with O_EXCL by another program;
        any other failure (EPERM from a device cgroup, ...) leaves the state unknown.
        """
        try:
            fd = os.open(path, os.O_RDONLY | os.O_EXCL)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                return True, None
            return False, f"an exclusive open failed: {exc.strerror}"
        with contextlib.suppress(OSError):
            os.close(fd)
        return False, None

    def signatures(self, path: str) -> tuple[tuple[str, ...], str | None]:
        wipefs = which("wipefs", WIPEFS_HINT)
        done = run([wipefs, "--no-act", "--json", path], timeout=PROBE_TIMEOUT_S)
        return signatures_of(done.returncode, done.stdout, done.last_error_line())
