"""The device stays the one confirmed and claimed: a loop device's backing file and its
other users, the node re-made mid-session, and the exclusive claim held while fio runs.

Every refusal leaves the devices, the files beside them and the files inside the
filesystems around them byte-identical (sha256 before and after, ``e2fsck -fn``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_safety_session import _one_error
from tests.e2e.test_safety_stacked import held_open
from tests.sshd import Sshd

MIB = 1 << 20
#: sib.img: an ext4 of 128 MiB at its start, 64 MiB of random data after it
SIB_FS_MIB, SIB_MIB = 128, 192


def _sh(*argv: str | Path) -> str:
    done = subprocess.run(
        [str(a) for a in argv], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout.strip()


def _range_digest(path: Path, start_mib: int, end_mib: int) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        fh.seek(start_mib * MIB)
        for _ in range(start_mib, end_mib):
            sha.update(fh.read(MIB))
    return sha.hexdigest()


def _tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "lost+found" not in p.parts
    }


@dataclass
class Sib:
    """sib.img: an ext4 with files at its start, random bytes after; its loop devices."""

    image: Path
    mnt: Path
    files: dict[str, str]
    loops: list[str] = field(default_factory=list)
    mounted: bool = False

    def attach(self, *options: str) -> Path:
        self.loops.append(
            _sh("losetup", "--find", "--show", "--direct-io=on", *options, self.image)
        )
        return Path(self.loops[-1])

    def mount(self, dev: Path, *options: str) -> None:
        _sh("mount", *options, dev, self.mnt)
        self.mounted = True

    def umount(self) -> None:
        if self.mounted:
            _sh("umount", self.mnt)
            self.mounted = False

    def tail(self) -> str:
        return _range_digest(self.image, SIB_FS_MIB, SIB_MIB)

    def check_intact(self) -> None:
        """The filesystem is clean and holds its files as made (read after an unmount)."""
        self.umount()
        _sh("e2fsck", "-fn", self.image)
        dev = self.attach(f"--sizelimit={SIB_FS_MIB * MIB}", "--read-only")
        self.mount(dev, "-o", "ro")
        try:
            assert _tree_digest(self.mnt) == self.files
        finally:
            self.umount()


@pytest.fixture
def sib(tmp_path: Path) -> Iterator[Sib]:
    if os.geteuid() != 0:
        pytest.skip("loop devices need root")
    content = tmp_path / "content"
    (content / "docs").mkdir(parents=True)
    for index in range(8):
        (content / "docs" / f"{index}.bin").write_bytes(os.urandom(2 * MIB))
    image = tmp_path / "sib.img"
    with image.open("wb") as fh:
        fh.truncate(SIB_MIB * MIB)
        fh.seek(SIB_FS_MIB * MIB)
        fh.write(os.urandom((SIB_MIB - SIB_FS_MIB) * MIB))
    _sh(
        "mkfs.ext4",
        "-q",
        "-F",
        "-d",
        content,
        "-E",
        "lazy_itable_init=0,lazy_journal_init=0",
        image,
        f"{SIB_FS_MIB}M",
    )
    (tmp_path / "mnt").mkdir()
    made = Sib(image, tmp_path / "mnt", _tree_digest(content))
    try:
        yield made
    finally:
        subprocess.run(["umount", made.mnt], check=False, capture_output=True, timeout=60)
        for dev in reversed(made.loops):
            subprocess.run(["losetup", "-d", dev], check=False, capture_output=True, timeout=30)


def _dut_at_64m(sib: Sib) -> Path:
    return sib.attach(f"--offset={64 * MIB}")


def test_a_loop_whose_backing_file_is_mounted_through_another_loop_is_refused(
    run_ssd: Any, sib: Sib
) -> None:
    fs = sib.attach(f"--sizelimit={SIB_FS_MIB * MIB}")
    sib.mount(fs)  # read-write, as the issue's: it writes its own metadata, never the DUT
    dut = _dut_at_64m(sib)
    tail = sib.tail()
    line = _one_error(run_ssd(f"--dut={dut}", f"--ssd-confirm={dut}"))
    assert line == (
        f"ERROR: refusing to write to {dut}: it is built on {sib.image}, which is mounted at"
        f" {sib.mnt}; unmount it first or use --ssd-readonly"
    )
    assert sib.tail() == tail
    sib.check_intact()


def test_a_loop_whose_backing_file_backs_another_loop_is_refused(run_ssd: Any, sib: Sib) -> None:
    other = sib.attach(f"--offset={100 * MIB}", f"--sizelimit={8 * MIB}")  # not even overlapping
    dut = _dut_at_64m(sib)
    before = hashlib.sha256(sib.image.read_bytes()).hexdigest()
    line = _one_error(run_ssd(f"--dut={dut}", f"--ssd-confirm={dut}"))
    assert line == (
        f"ERROR: refusing to write to {dut}: it is built on {sib.image}, which backs the loop"
        f" device {other}; detach it first or use --ssd-readonly"
    )
    assert hashlib.sha256(sib.image.read_bytes()).hexdigest() == before
    sib.check_intact()


def test_a_loop_whose_backing_file_is_open_in_a_process_is_refused(run_ssd: Any, sib: Sib) -> None:
    dut = _dut_at_64m(sib)
    before = hashlib.sha256(sib.image.read_bytes()).hexdigest()
    with held_open(sib.image) as reader:
        line = _one_error(run_ssd(f"--dut={dut}", f"--ssd-confirm={dut}"))
    assert line == (
        f"ERROR: refusing to write to {dut}: it is built on {sib.image}, which is open in"
        f" pid {reader} (sleep 60); close that program first or use --ssd-readonly"
    )
    assert hashlib.sha256(sib.image.read_bytes()).hexdigest() == before


def test_a_loop_beside_a_filesystem_in_its_file_is_measured(run_ssd: Any, sib: Sib) -> None:
    """The file's bytes outside the loop device's range are not probed: its ext4 does not refuse."""
    dut = sib.attach(f"--offset={SIB_FS_MIB * MIB}")
    run = run_ssd(f"--dut={dut}", f"--ssd-confirm={dut}", "-k", "rnd-write")
    run.result.assert_outcomes(passed=1, deselected=3)
    sib.check_intact()


def test_a_loop_whose_backing_file_is_mounted_is_refused_on_a_test_host(
    run_ssd: Any, sib: Sib, server: Sshd
) -> None:
    fs = sib.attach(f"--sizelimit={SIB_FS_MIB * MIB}")
    sib.mount(fs)
    dut = _dut_at_64m(sib)
    tail = sib.tail()
    config = f"--ssd-ssh-config={server.config}"
    line = _one_error(run_ssd(f"--dut={server.url(str(dut))}", f"--ssd-confirm={dut}", config))
    assert line == (
        f"ERROR: refusing to write to {dut} on ssh root@127.0.0.1 port {server.port}: it is"
        f" built on {sib.image}, which is mounted at {sib.mnt}; unmount it first or use"
        " --ssd-readonly"
    )
    assert sib.tail() == tail
    sib.check_intact()
