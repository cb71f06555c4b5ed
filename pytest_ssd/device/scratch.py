"""Scratch devices: a sparse backing file attached as a direct-I/O loop device.

Used when no ``--dut`` is given, so that anyone can try the plugin without a
spare SSD.  Without root or loop devices the plain file is used instead.
Every scratch device is released at session end; a crashed session's leftovers
are swept at the next start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.errors import DeviceError
from pytest_ssd.proc import run

LOSETUP_TIMEOUT_S = 60.0
_PREFIX = "scratch-"


@dataclass
class ScratchDevice:
    """A scratch target: ``path`` is the loop device, or the backing file itself."""

    path: Path
    backing: Path
    loop: bool
    note: str

    def release(self) -> None:
        """Detach the loop device and delete the backing file; safe to call twice."""
        if self.loop and _attached_to(self.backing):
            run(["losetup", "--detach", str(self.path)], timeout=LOSETUP_TIMEOUT_S)
        self.backing.unlink(missing_ok=True)


def _attached_to(backing: Path) -> list[str]:
    """Loop devices whose backing file is *backing*."""
    found = []
    for node in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            if node.read_text().strip() == str(backing):
                found.append(f"/dev/{node.parent.parent.name}")
    return found


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(directory: Path) -> list[str]:
    """Release scratch devices left by sessions that died; returns what was released."""
    released: list[str] = []
    for backing in directory.glob(f"{_PREFIX}*.img"):
        pid_text = backing.name.removeprefix(_PREFIX).split("-", 1)[0]
        if not pid_text.isdigit() or _pid_alive(int(pid_text)):
            continue
        for dev in _attached_to(backing):
            run(["losetup", "--detach", dev], timeout=LOSETUP_TIMEOUT_S)
            released.append(dev)
        backing.unlink(missing_ok=True)
        released.append(str(backing))
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
    backing = (directory / f"{_PREFIX}{os.getpid()}-{index}.img").resolve()
    try:
        with backing.open("wb") as fh:
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


def _dio_note(dev: Path, backing: Path) -> str:
    dio = Path("/sys/block") / dev.name / "loop" / "dio"
    with contextlib.suppress(OSError):
        if dio.read_text().strip() != "1":
            return (
                f"loop device {dev} on {backing} WITHOUT direct I/O: numbers include the page cache"
            )
    return f"direct-I/O loop device {dev} on {backing}"
