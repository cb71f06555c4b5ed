"""The device stays the one confirmed and claimed: a loop device's backing file and its
other users, the node re-made mid-session, and the exclusive claim held while fio runs.

Every refusal leaves the devices, the files beside them and the files inside the
filesystems around them byte-identical (sha256 before and after, ``e2fsck -fn``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
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


# -- the node re-made mid-session -----------------------------------------------------------

THREE_WRITES = """
from pytest_ssd.fio.job import FioJob


def _write(ssd, name):
    ssd.run(FioJob(name, "rnd", 4096, size=16 << 20, runtime_s=0.3, read_pct=0))


def test_first(ssd):
    _write(ssd, "first")


def test_second(ssd):
    _write(ssd, "second")


def test_third(ssd):
    _write(ssd, "third")
"""

#: after the first test, the DUT's node is re-made to point at another device
REMAKE = """
import os

pytest_ssd_suite = True


def pytest_runtest_logfinish(nodeid, location):
    if "::test_first[" in nodeid:
        os.unlink({node!r})
        os.mknod({node!r}, {mode}, {rdev})
"""


def _suite(folder: Path, conftest: str, tests: str) -> Path:
    folder.mkdir()
    (folder / "conftest.py").write_text(conftest)
    (folder / "test_it.py").write_text(tests)
    return folder


@contextlib.contextmanager
def kept_node(dev: Path) -> Iterator[os.stat_result]:
    """The node *dev* as it is now, put back (number, mode, owner) however the test ends."""
    st = dev.stat()
    try:
        yield st
    finally:
        dev.unlink(missing_ok=True)
        os.mknod(dev, st.st_mode, st.st_rdev)
        os.chown(dev, st.st_uid, st.st_gid)


def _remade(
    run_ssd: Any, dut: Path, loop_device: Any, tmp_path: Path, *args: str
) -> tuple[Any, Path]:
    """Run THREE_WRITES on *dut* (given as *args*) with its node re-made after the first test
    to point at another loop device; that device is byte-identical afterwards."""
    other = loop_device(64, "never-named.img")  # never named, never confirmed
    with other.open("wb") as fh:
        fh.write(os.urandom(64 * MIB))
    before = hashlib.sha256(other.read_bytes()).hexdigest()
    with kept_node(dut) as st:
        conftest = REMAKE.format(node=str(dut), mode=st.st_mode, rdev=other.stat().st_rdev)
        run = run_ssd(*args, suite=_suite(tmp_path / "suite", conftest, THREE_WRITES))
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    run.result.assert_outcomes(passed=1, failed=1)
    assert "test_third" not in "".join(run.result.outlines), "no test after the stop"
    assert hashlib.sha256(other.read_bytes()).hexdigest() == before
    return run, other


def _stopped(run: Any, line: str) -> None:
    out = run.result.stdout.str()
    assert any(text.startswith("DeviceChanged: ") and line in text for text in run.result.outlines)
    assert any(f"pytest-ssd stopped the run: {line}" in text for text in run.result.outlines), out


@pytest.mark.parametrize("xdist", [(), ("-n", "1")], ids=["alone", "xdist"])
def test_a_node_remade_mid_session_stops_the_run_before_writing(
    run_ssd: Any, random_loop: Path, loop_device: Any, tmp_path: Path, xdist: tuple[str, ...]
) -> None:
    was = random_loop.stat().st_rdev
    args = (f"--dut={random_loop}", f"--ssd-confirm={random_loop}", *xdist)
    run, other = _remade(run_ssd, random_loop, loop_device, tmp_path, *args)
    now = other.stat().st_rdev
    _stopped(
        run,
        f"refusing to write to {random_loop}: it is no longer the device identified, confirmed"
        f" and locked (it is device number {os.major(now)}:{os.minor(now)} now, device number"
        f" {os.major(was)}:{os.minor(was)} when it was locked); nothing more is written to it",
    )


def test_a_node_remade_on_a_test_host_stops_the_run_before_writing(
    run_ssd: Any, random_loop: Path, loop_device: Any, tmp_path: Path, server: Sshd
) -> None:
    args = (
        f"--dut={server.url(str(random_loop))}",
        f"--ssd-confirm={random_loop}",
        f"--ssd-ssh-config={server.config}",
    )
    run, _ = _remade(run_ssd, random_loop, loop_device, tmp_path, *args)
    _stopped(run, f"refusing to write to {random_loop}: it is no longer the device identified")


# -- the claim held for the session ---------------------------------------------------------

#: between two writes of the session, a mkfs and a mount of the DUT are tried
INTRUDER = """
import json
import subprocess

from pytest_ssd.fio.job import FioJob


def _try(*argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return [done.returncode, done.stderr.strip()]


def test_first(ssd):
    ssd.run(FioJob("first", "rnd", 4096, size=16 << 20, runtime_s=0.3, read_pct=0))
    tried = {{
        "mkfs": _try("mkfs.ext4", "-q", "-F", {node!r}),
        "mount": _try("mount", "-t", "ext4", {node!r}, {mnt!r}),
    }}
    with open({log!r}, "w") as fh:
        json.dump(tried, fh)
    subprocess.run(["umount", {mnt!r}], capture_output=True, timeout=60)
    ssd.run(FioJob("again", "rnd", 4096, size=16 << 20, runtime_s=0.3, read_pct=0))
"""


def _intruded(run_ssd: Any, dut: Path, tmp_path: Path, *args: str) -> dict[str, list[Any]]:
    """Run the INTRUDER suite on *dut*: what mkfs and mount said mid-session."""
    log, mnt = tmp_path / "tried.json", tmp_path / "intruder-mnt"
    mnt.mkdir()
    tests = INTRUDER.format(node=str(dut), mnt=str(mnt), log=str(log))
    suite = _suite(tmp_path / "suite", "pytest_ssd_suite = True\n", tests)
    try:
        run = run_ssd(*args, suite=suite)
    finally:
        subprocess.run(["umount", mnt], check=False, capture_output=True, timeout=60)
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    run.result.assert_outcomes(passed=1)
    tried: dict[str, list[Any]] = json.loads(log.read_text())
    return tried


def _refused_busy(tried: dict[str, list[Any]], dut: Path) -> None:
    mkfs_rc, mkfs_said = tried["mkfs"]
    mount_rc, mount_said = tried["mount"]
    assert mkfs_rc != 0 and "apparently in use by the system" in mkfs_said, tried
    assert mount_rc != 0 and "busy" in mount_said, tried
    probe = _sh("wipefs", "--no-act", "--json", dut)
    assert "ext4" not in probe, "no filesystem was made on the device"


@pytest.mark.parametrize("xdist", [(), ("-n", "1")], ids=["alone", "xdist"])
def test_mkfs_and_mount_of_the_device_fail_while_the_session_runs(
    run_ssd: Any, random_loop: Path, tmp_path: Path, xdist: tuple[str, ...]
) -> None:
    args = (f"--dut={random_loop}", f"--ssd-confirm={random_loop}", *xdist)
    _refused_busy(_intruded(run_ssd, random_loop, tmp_path, *args), random_loop)


def test_mkfs_and_mount_of_a_device_on_a_test_host_fail_while_the_session_runs(
    run_ssd: Any, random_loop: Path, tmp_path: Path, server: Sshd
) -> None:
    args = (
        f"--dut={server.url(str(random_loop))}",
        f"--ssd-confirm={random_loop}",
        f"--ssd-ssh-config={server.config}",
    )
    _refused_busy(_intruded(run_ssd, random_loop, tmp_path, *args), random_loop)
