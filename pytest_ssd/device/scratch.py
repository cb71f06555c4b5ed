"""Scratch devices: a sparse backing file attached as a direct-I/O loop device.

Used when no ``--dut`` is given, so that anyone can try the plugin without a
spare SSD.  Without root or loop devices the plain file is used instead.
Every scratch device is released at session end.  Each one is registered in the
machine's private state folder (:mod:`pytest_ssd.statedir`) before its file is made,
and its session holds a lock on the entry: whatever report folder it was made in, the
next session on the machine finds one whose session died (``kill -9``, power loss)
and releases it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.documents import loads_json
from pytest_ssd.errors import ConfigError, DeviceError
from pytest_ssd.machine.filelock import FileLock
from pytest_ssd.proc import run
from pytest_ssd.proc.sweep import pid_alive
from pytest_ssd.statedir import read_private, state_dir, write_private

LOSETUP_TIMEOUT_S = 60.0
#: said wherever a scratch device's results are shown
SCRATCH_BANNER = "these results describe no SSD"
_PREFIX = "scratch-"


@dataclass
class ScratchDevice:
    """A scratch target: ``path`` is the loop device, or the backing file itself."""

    path: Path
    backing: Path
    loop: bool
    note: str
    entry: Entry | None = field(default=None, repr=False)

    def release(self) -> None:
        """Detach the loop device and delete the backing file; safe to call twice."""
        _release(self.backing)
        if self.entry is not None:
            self.entry.remove()
            self.entry = None


def _release(backing: Path) -> list[str]:
    """Detach every loop device on *backing* and delete it; what was released."""
    released = []
    for dev in _attached_to(backing):
        run(["losetup", "--detach", dev], timeout=LOSETUP_TIMEOUT_S)
        released.append(dev)
    if backing.is_file() and backing.name.startswith(_PREFIX):
        backing.unlink(missing_ok=True)
        released.append(str(backing))
    return released


def _attached_to(backing: Path) -> list[str]:
    """Loop devices whose backing file is *backing* (also once it was deleted)."""
    found = []
    for node in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            if node.read_text().strip().removesuffix(" (deleted)") == str(backing):
                found.append(f"/dev/{node.parent.parent.name}")
    return found


@dataclass
class Entry:
    """A scratch device in the machine's registry: ``<id>.json`` says where, ``<id>.lock``
    is held by its session for as long as it lives."""

    record: Path
    lock: FileLock

    @classmethod
    def register(cls, backing: Path) -> Entry:
        folder = _registry()
        stem = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        lock = FileLock(folder / f"{stem}.lock")
        lock.acquire()  # a new name: nobody else can hold it
        record = folder / f"{stem}.json"
        write_private(record, json.dumps({"backing": str(backing), "pid": os.getpid()}))
        return cls(record, lock)

    def remove(self) -> None:
        self.record.unlink(missing_ok=True)
        self.lock.path.unlink(missing_ok=True)
        self.lock.release()


def _registry() -> Path:
    return state_dir("scratch")


def sweep_stale(directory: Path | None = None) -> list[str]:
    """Release scratch devices left by sessions that died, wherever they were made.

    The registry names them; *directory* is also searched for files of older
    versions (named after their dead session's pid).  Returns what was released.
    """
    released: list[str] = []
    for record in sorted(_registry().glob("*.json")):
        lock = FileLock(record.with_suffix(".lock"))
        if not lock.acquire():
            continue  # its session is alive
        try:
            backing = Path(loads_json(read_private(record))["backing"])
        except (OSError, ValueError, KeyError, TypeError, ConfigError):
            backing = None  # not an entry of ours: leave nothing but the entry behind
        if backing is not None:
            released += _release(backing)
        Entry(record, lock).remove()
    for backing in directory.glob(f"{_PREFIX}*.img") if directory else ():
        pid_text = backing.name.removeprefix(_PREFIX).split("-", 1)[0]
        if pid_text.isdigit() and not pid_alive(int(pid_text)):
            released += _release(backing)
    return released


def _loop_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("losetup") is None:
        return "losetup is not installed"
    if not Path("/dev/loop-control").exists():
        return "the kernel offers no loop devices"
    return None


def create(size: int, directory: Path, index: int = 0) -> ScratchDevice:
    """Make a sparse file of *size* bytes in *directory* and attach it as a loop device."""
    directory.mkdir(parents=True, exist_ok=True)
    backing = (directory / f"{_PREFIX}{os.getpid()}-{index}-{uuid.uuid4().hex[:8]}.img").resolve()
    entry = Entry.register(backing)  # before the file: a crash from here on is swept
    try:
        device = _attach(size, backing)
    except BaseException:
        _release(backing)
        entry.remove()
        raise
    device.entry = entry
    return device


def _attach(size: int, backing: Path) -> ScratchDevice:
    try:
        with backing.open("xb") as fh:
            fh.truncate(size)
    except OSError as exc:
        raise DeviceError(f"cannot create scratch file {backing}: {exc.strerror}") from None
    why_not = _loop_unavailable()
    if why_not is None:
        done = run(
            ["losetup", "--find", "--show", "--direct-io=on", str(backing)],
            timeout=LOSETUP_TIMEOUT_S,
        )
        if done.returncode == 0 and done.stdout.strip():
            dev = Path(done.stdout.strip())
            return ScratchDevice(dev, backing, loop=True, note=_dio_note(dev, backing))
        why_not = f"losetup failed: {done.last_error_line()}"
    note = f"plain file {backing} (no loop device: {why_not})"
    return ScratchDevice(backing, backing, loop=False, note=note)


def free_bytes(directory: Path) -> tuple[Path, int]:
    """The nearest existing folder at or above *directory* and the bytes free to us there."""
    folder = directory
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    st = os.statvfs(folder)
    return folder, st.f_bavail * st.f_frsize


def _dio_note(dev: Path, backing: Path) -> str:
    dio = Path("/sys/block") / dev.name / "loop" / "dio"
    with contextlib.suppress(OSError):
        if dio.read_text().strip() != "1":
            return (
                f"loop device {dev} on {backing} WITHOUT direct I/O: numbers include the page cache"
            )
    return f"direct-I/O loop device {dev} on {backing}"
