"""The safety guard on real loop devices: every refusal leaves the target byte-identical."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device import guard, openers
from pytest_ssd.device.guard import TargetFacts
from pytest_ssd.device.view import View
from pytest_ssd.errors import SafetyError
from pytest_ssd.machine import facts
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.proc.runner import run


def here(path: object) -> View:
    """This machine's look at *path* (the guard's and the node's view of it)."""
    return View.of(LOCAL, str(path))


MIB = 1 << 20
SECTOR = 512
LoopFactory = Callable[..., Path]


def _tool(*argv: str | Path) -> None:
    run([str(a) for a in argv], timeout=60).check()


def _mkfs_ext4(target: Path) -> None:
    # no lazy init: a mounted ext4 would otherwise zero its inode tables in the
    # background and change the content the tests compare
    _tool("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", target)


def _digest(path: Path) -> str:
    """SHA-256 of a small target, or of its first and last MiB when it is large."""
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(0)
        if size <= 64 * MIB:
            sha.update(fh.read())
        else:
            sha.update(fh.read(MIB))
            fh.seek(size - MIB)
            sha.update(fh.read(MIB))
    return sha.hexdigest()


def _assert_refused(path: Path, *needles: str) -> str:
    """check_writable refuses *path* with a one-line message naming it; content untouched."""
    before = _digest(path)
    with pytest.raises(SafetyError) as info:
        guard.check_writable(path, View.of(LOCAL, str(path)))
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    for needle in needles:
        assert needle in message
    assert _digest(path) == before
    return message


def _write(dev: Path, chunks: dict[int, bytes]) -> None:
    """Write raw *chunks* (offset -> bytes) to a test's own loop device."""
    with dev.open("r+b") as fh:
        for offset, data in chunks.items():
            fh.seek(offset)
            fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _dos_label() -> dict[int, bytes]:
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 8192)
    return {446: entry, 510: b"\x55\xaa"}


def _gpt_label(sectors: int) -> dict[int, bytes]:
    """A protective MBR, a primary GPT header and one partition entry."""
    entries = bytearray(128 * 128)
    linux_fs = uuid.UUID("0fc63daf-8483-4772-8e79-3d69d8477de4")
    entries[0:48] = struct.pack("<16s16sQQ", linux_fs.bytes_le, uuid.uuid4().bytes_le, 2048, 4095)
    header = bytearray(
        struct.pack(
            "<8sIIIIQQQQ16sQIII",
            b"EFI PART",
            0x00010000,
            92,
            0,
            0,
            1,
            sectors - 1,
            34,
            sectors - 34,
            uuid.uuid4().bytes_le,
            2,
            128,
            128,
            zlib.crc32(entries),
        )
    )
    header[16:20] = struct.pack("<I", zlib.crc32(header))
    pmbr = struct.pack("<B3sB3sII", 0, b"\0\x02\0", 0xEE, b"\xff\xff\xff", 1, sectors - 1)
    return {446: pmbr, 510: b"\x55\xaa", SECTOR: bytes(header), 2 * SECTOR: bytes(entries)}


def _root_device() -> Path | None:
    """The block device node behind "/" (by major:minor), when this machine has one."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" ")
        if fields[4] == "/":
            sysdir = Path("/sys/dev/block") / fields[2]
            if sysdir.exists() and (Path("/dev") / sysdir.resolve().name).is_block_device():
                return Path("/dev") / sysdir.resolve().name
    return None


@pytest.fixture
def loop(loop_device: LoopFactory) -> Path:
    return loop_device(32)


@pytest.fixture
def mount(loop_device: LoopFactory, tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """Factory: mount a device read-only on a fresh folder; all are unmounted at teardown.

    It depends on ``loop_device`` so that it is torn down before the devices are detached.
    """
    points: list[Path] = []

    def do_mount(dev: Path) -> Path:
        point = tmp_path / f"mnt{len(points)}"
        point.mkdir()
        _tool("mount", "-o", "ro", dev, point)  # read-only: the kernel writes nothing
        points.append(point)
        return point

    yield do_mount
    for point in reversed(points):
        run(["umount", str(point)], timeout=60)


@pytest.fixture
def exclusive(loop: Path) -> Iterator[Path]:
    """*loop*, held open with O_EXCL by this test (as a mount or another program would)."""
    fd = os.open(loop, os.O_RDONLY | os.O_EXCL)
    try:
        yield loop
    finally:
        os.close(fd)


@pytest.fixture
def stacked(loop: Path) -> Iterator[tuple[Path, Path]]:
    """(lower, upper): a second loop device whose backing file is the *loop* device."""
    upper = Path(run(["losetup", "--find", "--show", str(loop)], timeout=60).check().stdout.strip())
    try:
        yield loop, upper
    finally:
        run(["umount", "-l", str(upper)], timeout=60)
        run(["losetup", "-d", str(upper)], timeout=60)


def _backing_file(dev: Path) -> Path:
    return Path((Path("/sys/class/block") / dev.name / "loop/backing_file").read_text().strip())


# -- block devices ---------------------------------------------------------------------


def test_clean_loop_device_is_writable(loop: Path) -> None:
    facts = guard.check_writable(loop, View.of(LOCAL, str(loop)))
    backing = Path(f"/sys/class/block/{loop.name}/loop/backing_file").read_text().strip()
    below = TargetFacts(path=backing, exists=True, kind="file")  # its own loop is not "another"
    assert facts == TargetFacts(path=str(loop), exists=True, kind="block", built_on=(below,))
    assert guard.refusal(facts) is None


def test_ext4_is_refused(loop: Path) -> None:
    _mkfs_ext4(loop)
    message = _assert_refused(loop, "holds a ext4 signature", f"'wipefs -a {loop}'")
    assert message.endswith("or use --ssd-readonly")
    assert guard.inspect(loop, here(loop)).signatures == ("ext4",)


def test_mounted_device_is_refused(loop: Path, mount: Callable[[Path], Path]) -> None:
    _mkfs_ext4(loop)
    point = mount(loop)
    _assert_refused(loop, f"it is mounted at {point}; unmount it first")
    facts = guard.inspect(loop, here(loop))
    assert facts.mounts == (str(point),)
    assert facts.busy
    assert facts.system == ()


def test_mounted_device_is_refused_through_a_symlink(
    loop: Path, mount: Callable[[Path], Path], tmp_path: Path
) -> None:
    _mkfs_ext4(loop)
    point = mount(loop)
    link = tmp_path / "by-id-link"
    link.symlink_to(loop)
    _assert_refused(link, f"mounted at {point}")


def test_exclusively_open_device_is_refused(exclusive: Path) -> None:
    _assert_refused(exclusive, "it is in use (an exclusive open failed")
    facts = guard.inspect(exclusive, here(exclusive))
    assert facts.busy
    assert facts.mounts == ()


@pytest.mark.parametrize("label", ["dos", "gpt"])
def test_partition_table_is_refused(loop: Path, label: str) -> None:
    _write(loop, _dos_label() if label == "dos" else _gpt_label(32 * MIB // SECTOR))
    _assert_refused(loop, label, "wipefs -a")
    assert label in guard.inspect(loop, here(loop)).signatures


def test_swap_signature_is_refused(loop: Path) -> None:
    _tool("mkswap", loop)
    _assert_refused(loop, "holds a swap signature")
    assert not guard.inspect(loop, here(loop)).swap


def test_root_filesystem_device_is_refused_as_system() -> None:
    root = _root_device()
    if root is None:
        pytest.skip("'/' is not on a block device here")
    facts = guard.inspect(root, here(root))  # reads only: never write to this device
    assert "/" in facts.system
    with pytest.raises(SafetyError) as info:
        guard.check_writable(root, View.of(LOCAL, str(root)))
    message = str(info.value)
    assert message.startswith(f"refusing to write to {root}: it holds the running system's root")
    assert "\n" not in message


# -- paths that are not targets ----------------------------------------------------------


@pytest.mark.parametrize("where", ["tmp", "dev"])
def test_missing_path_is_refused_and_not_created(tmp_path: Path, where: str) -> None:
    path = tmp_path / "nvme0n1" if where == "tmp" else Path("/dev/nvme97n1")
    if path.exists():
        pytest.skip(f"{path} exists on this machine")
    with pytest.raises(SafetyError) as info:
        guard.check_writable(path, View.of(LOCAL, str(path)))
    assert str(info.value) == (
        f"refusing to write to {path}: it does not exist (fio would create a regular file "
        "there); check the path"
    )
    assert not path.exists()
    with pytest.raises(SafetyError, match="does not exist"):
        guard.check_readable(path, here(path))
    assert not path.exists()


@pytest.mark.parametrize("what", ["directory", "/dev/null"])
def test_other_types_are_refused(tmp_path: Path, what: str) -> None:
    path = tmp_path if what == "directory" else Path("/dev/null")
    before = sorted(path.iterdir()) if path.is_dir() else None
    with pytest.raises(SafetyError, match="is not a block device or a regular file") as info:
        guard.check_writable(path, View.of(LOCAL, str(path)))
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
    assert (sorted(path.iterdir()) if path.is_dir() else None) == before
    with pytest.raises(SafetyError, match="not a block device or a regular file"):
        guard.check_readable(path, here(path))


# -- regular files -----------------------------------------------------------------------


def test_clean_regular_file_is_writable(tmp_path: Path) -> None:
    path = tmp_path / "target.img"
    with path.open("wb") as fh:
        fh.truncate(32 * MIB)
    facts = guard.check_writable(path, View.of(LOCAL, str(path)))
    assert facts == TargetFacts(path=str(path), exists=True, kind="file")
    assert guard.check_readable(path, here(path)) == facts


def test_regular_file_backing_a_loop_device_is_refused(loop: Path) -> None:
    backing = _backing_file(loop)
    _assert_refused(backing, f"it backs the loop device {loop}")
    assert guard.inspect(backing, here(backing)).backs_loop == (loop.name,)


def test_device_backing_a_loop_device_is_refused(stacked: tuple[Path, Path]) -> None:
    lower, upper = stacked
    _assert_refused(lower, f"it backs the loop device {upper}")


def test_device_under_a_mounted_loop_device_is_refused(
    stacked: tuple[Path, Path], mount: Callable[[Path], Path]
) -> None:
    lower, upper = stacked
    _mkfs_ext4(upper)
    point = mount(upper)
    _assert_refused(lower, f"mounted at {point}")
    assert guard.inspect(lower, here(lower)).backs_loop == (upper.name,)


def test_regular_file_of_a_mounted_loop_device_is_refused(
    loop: Path, mount: Callable[[Path], Path]
) -> None:
    _mkfs_ext4(loop)
    point = mount(loop)
    facts = guard.inspect(_backing_file(loop), here(_backing_file(loop)))
    assert facts.mounts == (str(point),)
    assert facts.signatures == ("ext4",)
    _assert_refused(_backing_file(loop), f"mounted at {point}")


def test_regular_file_with_ext4_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fs.img"
    with path.open("wb") as fh:
        fh.truncate(32 * MIB)
    _mkfs_ext4(path)
    _assert_refused(path, "holds a ext4 signature")


def test_check_readable_accepts_a_mounted_device(loop: Path, mount: Callable[[Path], Path]) -> None:
    _mkfs_ext4(loop)
    mount(loop)
    assert guard.check_readable(loop, here(loop)).kind == "block"


# -- refusal() on facts the machine cannot produce (no device-mapper, no partitions) ------

CLEAN = TargetFacts(path="/dev/sdz", exists=True, kind="block")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"holders": ("dm-0", "md127")}, "it is in use by dm-0, md127;"),
        ({"partitions": ("sdz1",), "holders": ("dm-3",)}, "it is in use by dm-3;"),
        ({"partitions": ("sdz1",), "mounts": ("/srv",)}, "it is mounted at /srv;"),
        ({"swap": True}, "it is an active swap area; run 'swapoff /dev/sdz'"),
        ({"signatures": ("LVM2_member",)}, "holds a LVM2_member signature"),
        ({"signatures": ("ext4", "dos")}, "holds ext4, dos signatures"),
        ({"probe_error": "wipefs failed: boom"}, "could not be probed (wipefs failed: boom)"),
        ({"system": ("/boot",), "mounts": ("/boot",)}, "system's filesystem (/boot); this is"),
    ],
)
def test_refusal_reasons(change: dict[str, Any], needle: str) -> None:
    message = guard.refusal(replace(CLEAN, **change))
    assert message is not None
    assert message.startswith("refusing to write to /dev/sdz: ")
    assert needle in message


def test_system_is_checked_first() -> None:
    everything = replace(
        CLEAN,
        mounts=("/",),
        swap=True,
        signatures=("ext4",),
        holders=("dm-0",),
        busy=True,
        system=("/",),
        backs_loop=("loop0",),
    )
    assert guard.refusal(everything) == (
        "refusing to write to /dev/sdz: it holds the running system's root filesystem (/); "
        "this is never allowed, choose another target"
    )


def test_refusal_is_one_line_for_odd_paths() -> None:
    message = guard.refusal(TargetFacts(path="/tmp/a\nb", exists=False, kind=None))
    assert message is not None
    assert "\n" not in message
    assert "/tmp/a\\x0ab" in message


# -- confirmation ------------------------------------------------------------------------

DESCRIPTION = "QEMU NVMe Ctrl, serial GOLDEN0001, 2.0 GiB (2.1 GB)"


def test_confirmation_missing() -> None:
    with pytest.raises(SafetyError) as info:
        guard.check_confirmation("/dev/loop3", DESCRIPTION, "/dev/loop3", [])
    assert str(info.value) == (
        f"refusing to write to /dev/loop3 ({DESCRIPTION}): it holds no confirmation; "
        "add --ssd-confirm=/dev/loop3 if its data may be destroyed"
    )


def test_confirmation_wrong() -> None:
    with pytest.raises(SafetyError) as info:
        guard.check_confirmation("/dev/nvme0n1", DESCRIPTION, "GOLDEN0001", ["GOLDEN0002"])
    message = str(info.value)
    assert "\n" not in message
    assert "/dev/nvme0n1" in message
    assert DESCRIPTION in message
    assert "GOLDEN0002" in message
    assert "add --ssd-confirm=GOLDEN0001 " in message


def test_confirmation_given() -> None:
    guard.check_confirmation("/dev/nvme0n1", DESCRIPTION, "GOLDEN0001", ["x", "GOLDEN0001"])


# -- what the target is built on, and who holds it open ------------------------------------


def test_a_reason_below_the_target_names_the_device_it_is_built_on() -> None:
    dm = replace(CLEAN, path="/dev/dm-0", mounts=("/srv",))
    md = replace(CLEAN, path="/dev/md0", built_on=(dm,))
    message = guard.refusal(replace(CLEAN, built_on=(replace(CLEAN, path="/dev/sdy"), md)))
    assert message == (
        "refusing to write to /dev/sdz: it is built on /dev/md0, which is built on /dev/dm-0,"
        " which is mounted at /srv; unmount it first or use --ssd-readonly"
    )
    assert guard.refusal(replace(CLEAN, built_on=(replace(CLEAN, path="/dev/sdy"),))) is None


def test_the_targets_own_reason_comes_before_what_it_is_built_on() -> None:
    below = replace(CLEAN, path="/dev/loop1", signatures=("ext4",))
    facts = replace(CLEAN, swap=True, built_on=(below,))
    message = guard.refusal(facts)
    assert message is not None and "it is an active swap area" in message


def test_openers_are_named_with_their_command() -> None:
    message = guard.refusal(replace(CLEAN, openers=("pid 42 (dd if=/dev/sdz)",)))
    assert message == (
        "refusing to write to /dev/sdz: it is open in pid 42 (dd if=/dev/sdz); close that"
        " program first or use --ssd-readonly"
    )


def test_the_scan_finds_a_plain_opener_but_not_this_process_or_its_parents(
    tmp_path: Path,
) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(b"x" * 4096)
    st = target.stat()
    key = (st.st_dev, st.st_ino)
    assert os.getpid() in facts.ancestors() and os.getppid() in facts.ancestors()
    with target.open("rb"):
        assert facts.scan((), (key,)) == set(), "this process does not count"
        with target.open("rb") as held:
            child = subprocess.Popen(["sleep", "30"], stdin=held)
        try:
            assert View.of(LOCAL, str(target)).openers((), (key,)) == (
                f"pid {child.pid} (sleep 30)",
            )
        finally:
            child.kill()
            child.wait(timeout=10)
    assert View.of(LOCAL, str(target)).openers((), (key,)) == ()


def test_an_opener_seen_only_once_is_a_passing_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    scans = iter([{11, 12}, {12}, {12, 13}])
    monkeypatch.setattr(facts, "scan", lambda devices, files: next(scans))
    monkeypatch.setattr(openers, "SCAN_PAUSE_S", 0.0)
    view = View.of(LOCAL, "/dev/null")
    assert [line.split(" (")[0] for line in view.openers((1,), ())] == ["pid 12"]
    monkeypatch.setattr(facts, "scan", lambda devices, files: set())
    assert view.openers((1,), ()) == ()
