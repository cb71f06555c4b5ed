"""The machine a device is in: this one, or a test host reached over SSH.

Every program pytest-ssd runs on a device's machine (``nvme``, ``blkdiscard``,
``wipefs``, ...) and every small file it reads there (sysfs attributes, the
block layer's counters) goes through a :class:`Machine`, so that one code path
measures a local drive and a drive in a test host alike.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from pytest_ssd.errors import DeviceError, ToolError
from pytest_ssd.machine import blocks, hostfacts, localcopy
from pytest_ssd.machine.facts import Facts, HereFacts
from pytest_ssd.machine.held import Held, hold_here
from pytest_ssd.machine.locks import HereLocks, NodeLocks
from pytest_ssd.machine.snapshot import BLOCK_NAME, Reads, SnapshotError, printed, take_all
from pytest_ssd.machine.ssh import Ssh
from pytest_ssd.proc.runner import Completed, run, which

READ_TIMEOUT_S = 60.0
#: ``sh -c GLOB sh PATTERN``: the paths a glob names there, one a line
GLOB = 'for f in $1; do [ -e "$f" ] && echo "$f"; done; exit 0'
#: ``sh -c READ_MANY sh PATH...``: each file's text then NUL, or UNREAD then NUL (text has
#: no NUL: /proc and /sys files)
READ_MANY = 'for f; do cat -- "$f" 2>/dev/null || printf "\\001"; printf "\\000"; done'
UNREAD = "\x01"
T = TypeVar("T")
SYSFS = Path("/sys")
#: ``sh -c SET sh PATH VALUE``: an existing regular file of /sys or /proc, never a symlink
#: itself, written where it resolves there (no file is ever created)
SET = """
[ -L "$1" ] && { echo "$1 is a symlink: not a kernel attribute" >&2; exit 3; }
r=$(readlink -e -- "$1") || { echo "$1: no such file (no file is ever created)" >&2; exit 3; }
case $r in /sys/*|/proc/*) ;; *) echo "$1 is $r: not in /sys or /proc" >&2; exit 3 ;; esac
[ -f "$r" ] || { echo "$r: not a kernel attribute" >&2; exit 3; }
printf %s "$2" > "$r"
"""
#: the trees a kernel attribute is in (the only files :meth:`Machine.write_attribute` writes)
KERNEL_TREES = ("/sys", "/proc")


#: a machine's place: this machine, or a test host
Place = Literal["local", "host"]


class FileReader(Protocol):
    """What reads small files on a machine in one go: the machine itself, or a fio batch's
    agent running there (a request on its socket instead of an SSH command)."""

    def read_many(self, paths: Sequence[str]) -> list[str | None]: ...


class Machine(ABC):
    """Programs and files of one machine."""

    #: where it is (what a purge method's capabilities name)
    place: Place
    #: a regular file there may be a device under test (a test host's fio server is given
    #: block devices only)
    file_targets: bool = False
    #: a program it runs is a child of this process, its output read as it is written;
    #: False: it runs across a connection, where what lasts is better served there
    #: (:meth:`serve`) and reached through a socket forwarded here (:meth:`forward`)
    children: bool = False

    @property
    @abstractmethod
    def where(self) -> str:
        """The machine in a message: "" for this one, ``ssh root@host port 2222`` for a host."""

    @property
    @abstractmethod
    def host(self) -> str | None:
        """The host's name as labels show it; None for this machine."""

    @property
    def reached_as(self) -> str | None:
        """The machine as the report's device header names it: how it is reached
        (``root@lab-07 port 22``); None for this one."""
        return None

    @abstractmethod
    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        artifacts: Path | None = None,
        name: str | None = None,
        stdin: str | None = None,
    ) -> Completed:
        """Run *argv* there to completion (never raises on a non-zero exit)."""

    def beside(self, work: Callable[[], T]) -> Callable[[], T]:
        """Start *work* (more of the machine's reads) beside what the caller does next, so
        that their round trips overlap; what it gave, when called (it waits for it)."""
        pool = ThreadPoolExecutor(1, thread_name_prefix="ssd-beside")
        future = pool.submit(work)

        def result() -> T:
            try:
                return future.result()
            finally:
                pool.shutdown()

        return result

    @abstractmethod
    def which(self, program: str, install_hint: str) -> str:
        """The path of *program* there, or a :class:`ToolError` saying how to install it."""

    @abstractmethod
    def read(self, path: str) -> str | None:
        """A small file's text there (a sysfs attribute); None when it cannot be read."""

    def read_many(self, paths: Sequence[str]) -> list[str | None]:
        """Each of several small files' text there, as :meth:`read` gives one (a test host
        answers them in one round trip)."""
        return [self.read(path) for path in paths]

    def glob(self, pattern: str) -> list[str]:
        """The paths shell glob *pattern* names there (``/sys/block/nvme*``), sorted."""
        done = self.run(["sh", "-c", GLOB, "sh", pattern], timeout=READ_TIMEOUT_S, name="glob")
        return sorted(done.stdout.splitlines()) if done.returncode == 0 else []

    def facts(self, targets: Mapping[str, Iterable[int]], *, write: bool) -> dict[str, Facts]:
        """The block-device facts of the machine now, for each of *targets* (each one's pids
        that are pytest-ssd's own there), in one look: with the probes a write check needs
        too when *write*.  One ``sh`` snapshot there (:mod:`.hostfacts`)."""
        return dict(hostfacts.snapshots(self, targets, write=write))

    def locks(self, artifacts: Path) -> NodeLocks:
        """A holder of the session's locks and claims on the machine's device nodes, held
        until it is closed (*artifacts*: where a holder running there keeps its output)."""
        raise DeviceError(f"{self.where or 'this machine'}: pytest-ssd cannot lock devices there")

    @contextlib.contextmanager
    def sysfs(
        self, reads: Reads, devices: list[str], what: str = "sysfs"
    ) -> Iterator[dict[str, Path]]:
        """Where a reader finds the files *reads* declares of each block device of *devices*,
        while the context lasts: the root of a ``/sys`` it reads exactly as this machine's
        (a device the machine does not have is left out).  A test host's is a copy in a
        temporary folder (:mod:`~pytest_ssd.machine.snapshot`, one command; *what* names it
        in a message).

        Raises :class:`SnapshotError` when the files cannot be read.
        """
        if not devices:
            yield {}
            return
        with tempfile.TemporaryDirectory(prefix="ssd-sysfs-") as tmp:
            found = take_all(self, reads, Path(tmp), devices=devices, what=what)
            yield {name: copy.sysfs for name, copy in found.items()}

    def read_blocks(self, path: str, unit: int, numbers: list[int]) -> Iterator[tuple[int, bytes]]:
        """(block, data) of each block *numbers* of *unit* bytes of *path* there, direct I/O.

        Raises :class:`DeviceError` when they cannot be read.
        """
        argv = ["sh", "-c", blocks.READ_THERE, "sh", path, str(unit), *map(str, numbers)]
        done = self.run(argv, timeout=blocks.READ_TIMEOUT_S, name="dd-read-back")
        if done.returncode != 0:
            raise DeviceError(f"{self.where}: {done.last_error_line()}")
        return blocks.parse_blocks(done.stdout, numbers)

    @property
    def device_faults(self) -> dict[str, str]:
        """Block device name -> what the machine's kernel said happened to it this session
        (the device events watch fills it: :mod:`pytest_ssd.device.udev.events`); a program
        running on that device is stopped with the line."""
        found: dict[str, str] | None = self.__dict__.get("_device_faults")
        if found is None:
            found = self.__dict__["_device_faults"] = {}
        return found

    @property
    def on(self) -> str:
        """The machine after a path in a message: ``" on ssh root@host port 2222"``, "" here."""
        return f" on {self.where}" if self.where else ""

    def naming(self, target: str) -> str:
        """*target* (a device, a file) in a message: ``/dev/sdb (ssh root@host)``, as it is
        here."""
        return f"{target} ({self.where})" if self.where else target

    @property
    def poll_s(self) -> float:
        """Seconds between two readings of a small file there in a loop (a stall watch): a
        command away, every few seconds."""
        return 5.0

    def block_name(self, target: str, *, holding: bool = False) -> str | None:
        """The kernel's name of block device *target* there (*holding*: or of the device a
        regular file is on); None when it names none.

        There: a ``/dev/<name>`` node, the session's canonical node of the device.
        """
        name = target.removeprefix("/dev/")
        return name if target.startswith("/dev/") and name and "/" not in name else None

    def file_size(self, target: str) -> int | None:
        """Bytes of regular file *target* there; None when it is none."""
        done = self.run(["stat", "-L", "-c", "%F %s", "--", target], timeout=READ_TIMEOUT_S)
        kind, _, size = done.stdout.strip().rpartition(" ")
        ok = done.returncode == 0 and kind.startswith("regular") and size.isdigit()
        return int(size) if ok else None

    def write_attribute(self, path: str, value: str) -> None:
        """Write *value* to the kernel attribute *path* there, in one write: an existing
        regular file of /sys or /proc, never a symlink itself (no file is ever created).

        Raises :class:`OSError` (its ``strerror`` says why) when it is refused or fails.
        """
        argv = ["sh", "-c", SET, "sh", path, value]
        done = self.run(argv, timeout=READ_TIMEOUT_S, name="write-attribute")
        if done.returncode != 0:
            raise OSError(errno.EINVAL, f"{done.last_error_line()}{self.on}")

    def declared(self, reads: Reads, devices: list[str], seconds: float, what: str) -> str:
        """What :func:`~pytest_ssd.machine.snapshot.script` prints there of *reads* and of
        the block *devices*, its samples *seconds* apart (:class:`SnapshotError` when it
        cannot be read; *what* names it)."""
        return printed(self, reads, devices, seconds, what)

    def hold(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed:
        """Start *argv* there and wait for its mark *ready*: held (until closed, this
        process ends or the connection is lost), or how it ended."""
        raise ToolError(f"{self.where or 'this machine'} cannot hold a command")

    def serve(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed:
        """:meth:`hold` a program that serves this process for the session (a fio server),
        on what the machine keeps for what lasts (a test host: its agent, off sshd's
        session budget)."""
        return self.hold(argv, artifacts=artifacts, name=name, ready=ready, timeout=timeout)

    @property
    def sockets(self) -> Path:
        """A short folder here for the sockets :meth:`forward` makes (a unix socket's path
        holds 107 bytes), removed with the connection."""
        raise ToolError(f"{self.where or 'this machine'} forwards no socket")

    def forward(self, here: Path, there: str) -> None:
        """Make unix socket *here* reach socket *there* on the machine; :class:`DeviceError`
        when it cannot."""
        raise ToolError(f"{self.where or 'this machine'} forwards no socket")

    def unforward(self, here: Path, there: str) -> None:
        """Stop forwarding *here* (:meth:`forward`) and remove it."""
        here.unlink(missing_ok=True)


class LocalMachine(Machine):
    """This machine."""

    place: Place = "local"
    file_targets: bool = True
    children: bool = True

    @property
    def where(self) -> str:
        return ""

    def declared(self, reads: Reads, devices: list[str], seconds: float, what: str) -> str:
        """Read in this process, no program, unless block devices are asked for
        (:mod:`.localcopy`)."""
        if devices:
            return super().declared(reads, devices, seconds, what)
        return localcopy.text(reads, seconds)

    @property
    def host(self) -> str | None:
        return None

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        artifacts: Path | None = None,
        name: str | None = None,
        stdin: str | None = None,
    ) -> Completed:
        return run(list(argv), timeout=timeout, artifacts=artifacts, name=name, stdin=stdin)

    def which(self, program: str, install_hint: str) -> str:
        return which(program, install_hint)

    def read(self, path: str) -> str | None:
        try:
            return Path(path).read_text(errors="replace")
        except OSError:
            return None

    def glob(self, pattern: str) -> list[str]:
        return sorted(str(p) for p in Path("/").glob(pattern.lstrip("/")))

    def beside(self, work: Callable[[], T]) -> Callable[[], T]:
        """Done at once: a read here is quicker than starting a thread for it."""
        done = work()
        return lambda: done

    def facts(self, targets: Mapping[str, Iterable[int]], *, write: bool) -> dict[str, Facts]:
        """Read in place as they are asked for (pytest-ssd's own: this process and those
        above it)."""
        look = HereFacts()
        return dict.fromkeys(targets, look)

    def locks(self, artifacts: Path) -> NodeLocks:
        """This process: an ``open(2)`` and a ``flock(2)`` a node, no program."""
        return HereLocks()

    @contextlib.contextmanager
    def sysfs(
        self, reads: Reads, devices: list[str], what: str = "sysfs"
    ) -> Iterator[dict[str, Path]]:
        """This machine's own ``/sys``, read in place (nothing is copied)."""
        for device in devices:
            if not BLOCK_NAME.fullmatch(device):
                raise SnapshotError(f"not a block device name: {device[:200]!r}")
        yield {name: SYSFS for name in devices if (SYSFS / "class" / "block" / name).exists()}

    def read_blocks(self, path: str, unit: int, numbers: list[int]) -> Iterator[tuple[int, bytes]]:
        return blocks.read_here(path, unit, numbers)

    @property
    def poll_s(self) -> float:
        """A file read away: every second."""
        return 1.0

    def block_name(self, target: str, *, holding: bool = False) -> str | None:
        """By the device number of the node (or of the file's filesystem), in ``/sys``."""
        try:
            st = Path(target).stat()
        except OSError:
            return None
        if stat.S_ISBLK(st.st_mode):
            number = st.st_rdev
        elif holding and stat.S_ISREG(st.st_mode):
            number = st.st_dev
        else:
            return None
        folder = Path(f"/sys/dev/block/{os.major(number)}:{os.minor(number)}")
        return folder.resolve().name if folder.is_dir() else None

    def file_size(self, target: str) -> int | None:
        try:
            st = Path(target).stat()
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def write_attribute(self, path: str, value: str) -> None:
        """In process: the file as opened, not as named a moment before."""
        if not _kernel_file(path):
            raise OSError(errno.EPERM, "not in /sys or /proc")
        # never O_CREAT: a kernel attribute exists, and no other file is ever made;
        # O_NONBLOCK: a FIFO put in the way does not hang the session
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or not _kernel_file(f"/proc/self/fd/{fd}"):
                raise OSError(errno.EPERM, "not a kernel attribute")
            # one write() call, as echo does: sysfs takes the value from a single write
            os.write(fd, value.encode())
        finally:
            os.close(fd)

    def hold(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed:
        return hold_here(argv, artifacts=artifacts, name=name, ready=ready, timeout=timeout)


#: this machine
LOCAL = LocalMachine()


@dataclass
class SshMachine(Machine):
    """A test host, over the connection *ssh* (opened by its owner)."""

    ssh: Ssh
    #: what must run before a program is served there (its owner starts the host's agent)
    lasting: Callable[[], None] = field(default=lambda: None, repr=False)
    _paths: dict[str, str] = field(default_factory=dict, repr=False)
    #: a host's devices are prepared in threads: each program is looked for there once
    _looking: threading.Lock = field(default_factory=threading.Lock, repr=False)
    place: Place = field(default="host", init=False)

    @property
    def where(self) -> str:
        return self.ssh.where

    @property
    def host(self) -> str | None:
        return self.ssh.address.label

    @property
    def reached_as(self) -> str | None:
        address = self.ssh.address
        return f"{address.destination} port {address.port or 22}"

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        artifacts: Path | None = None,
        name: str | None = None,
        stdin: str | None = None,
    ) -> Completed:
        return self.ssh.run(argv, timeout=timeout, stdin=stdin, artifacts=artifacts, name=name)

    def which(self, program: str, install_hint: str) -> str:
        with self._looking:
            if program not in self._paths:
                done = self.ssh.run(
                    ["sh", "-c", 'command -v "$1"', "sh", program], timeout=READ_TIMEOUT_S
                )
                path = done.stdout.strip()
                if done.returncode != 0 or not path.startswith("/"):
                    raise ToolError(f"{program} is not installed on {self.where}: {install_hint}")
                self._paths[program] = path
            return self._paths[program]

    def read(self, path: str) -> str | None:
        done = self.ssh.run(["cat", "--", path], timeout=READ_TIMEOUT_S)
        return done.stdout if done.returncode == 0 else None

    def locks(self, artifacts: Path) -> NodeLocks:
        """The host's lock process (:mod:`.hostlocks`), on a channel of its own."""
        # the controller's: a worker locks nothing
        from pytest_ssd.machine.hostlocks import HostLocks  # noqa: PLC0415

        return HostLocks(self.ssh, artifacts)

    def read_many(self, paths: Sequence[str]) -> list[str | None]:
        done = self.ssh.run(["sh", "-c", READ_MANY, "sh", *paths], timeout=READ_TIMEOUT_S)
        texts = done.stdout.split("\0") if done.returncode == 0 else []
        if len(texts) != len(paths) + 1:  # each file's text ends in NUL
            return [None] * len(paths)
        return [None if text.endswith(UNREAD) else text for text in texts[:-1]]

    def hold(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed:
        return self.ssh.hold(argv, artifacts=artifacts, name=name, ready=ready, timeout=timeout)

    def serve(
        self, argv: Sequence[str], *, artifacts: Path, name: str, ready: str, timeout: float
    ) -> Held | Completed:
        self.lasting()
        return self.ssh.stream(argv, artifacts=artifacts, name=name, ready=ready, timeout=timeout)

    @property
    def sockets(self) -> Path:
        """The connection's own short folder."""
        return self.ssh.control_dir

    def forward(self, here: Path, there: str) -> None:
        self.ssh.forward(here, there)

    def unforward(self, here: Path, there: str) -> None:
        """The master may be the controller's: it forwards no more."""
        self.ssh.cancel(here, there)


def _kernel_file(path: str) -> bool:
    """*path*, symlinks resolved, is in /sys or /proc."""
    try:
        real = os.path.realpath(path)
    except OSError:  # a link it may not follow (/proc/1/root): not one of ours
        return False
    return any(real.startswith(f"{tree}/") for tree in KERNEL_TREES)
