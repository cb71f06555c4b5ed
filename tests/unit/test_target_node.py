"""The node fio opens: canonical paths, fio-safe names, the check of fio's target, the lock."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device import node
from pytest_ssd.device.node import DeviceLock, canonical, device_key
from pytest_ssd.device.view import View
from pytest_ssd.errors import ConfigError, FioError, SafetyError
from pytest_ssd.fio.engine import check_target
from pytest_ssd.fio.job import FioJob, fio_path, render
from pytest_ssd.fio.results import parse_output
from pytest_ssd.machine import locks
from pytest_ssd.machine.locks import HereLocks
from pytest_ssd.machine.machine import LOCAL, Machine
from tests.shell_machine import Shell

GOLDEN = Path(__file__).parents[1] / "golden" / "fio"


def here(path: object) -> View:
    """This machine's look at *path* (the guard's and the node's view of it)."""
    return View.of(LOCAL, str(path))


def test_a_colon_is_escaped_in_filename_only() -> None:
    escaped = "/dev/disk/by-path/pci-0000\\:00\\:04.0"
    assert fio_path("/dev/disk/by-path/pci-0000:00:04.0") == escaped
    assert fio_path("/r/a:b/log", filename=False) == "/r/a:b/log"
    text = render([FioJob("x", "seq", 4096)], "/data/a:b.img")
    assert "filename=/data/a\\:b.img\n" in text


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/data/c;d.img", "';'"),
        ("/data/e#f.img", "'#'"),
        ("/data/${HOME}.img", "'$' '{' '}'"),
        ("/data/x\\y", "'\\\\'"),
        ("/data/q'uote", '"\'"'),
        ("/data/trailing ", "blanks at its ends"),
        (" /data/leading", "blanks at its ends"),
        ("/data/new\nline", "'\\n'"),
    ],
)
def test_a_path_fio_would_cut_expand_or_strip_is_refused(path: str, shown: str) -> None:
    with pytest.raises(ConfigError, match="fio cannot be given the path") as info:
        fio_path(path)
    assert f"it holds {shown} (fio cuts" in str(info.value)
    with pytest.raises(ConfigError):
        render([FioJob("x", "seq", 4096)], path)


def test_ordinary_names_pass_unchanged() -> None:
    for path in ("/dev/nvme0n1", "/dev/loop7", "/data/ssd test.bin", "/data/ü-1,2+3=4@x~.img"):
        assert fio_path(path) == path


def test_canonical_resolves_links_and_refuses_control_characters(tmp_path: Path) -> None:
    target = tmp_path / "a:b.img"
    target.write_bytes(b"x")
    link = tmp_path / "links" / "pci-0000:00:04.0"
    link.parent.mkdir()
    link.symlink_to(target)
    assert canonical(link, here(link)) == target
    assert device_key(link) == device_key(target)
    assert canonical(tmp_path / "missing", here(tmp_path / "missing")) == tmp_path / "missing"
    with pytest.raises(SafetyError, match=r"control characters; check it") as info:
        canonical(Path(f"{target}\nfilename=/dev/sda"), here(Path(f"{target}\nfilename=/dev/sda")))
    assert "\\x0a" in str(info.value) and "\n" not in str(info.value)


def test_a_block_device_becomes_its_kernel_node(loop_device: Any, tmp_path: Path) -> None:
    dev: Path = loop_device(64)
    copy = tmp_path / "my-node"  # a mknod copy of the device elsewhere
    st = dev.stat()
    os.mknod(copy, 0o600 | (st.st_mode & 0o170000), st.st_rdev)
    link = tmp_path / "by-path:0"
    link.symlink_to(copy)
    assert canonical(copy, here(copy)) == dev
    assert canonical(link, here(link)) == dev


def _output(name: str, **changes: Any) -> Any:
    output = parse_output((GOLDEN / name).read_text())
    return dataclasses.replace(output, **changes)


def test_fio_on_the_guarded_file_passes_and_on_another_fails() -> None:
    output = _output("two_jobs_stonewall.json")  # filename=/tmp/gold/data.bin
    check_target(output, "/tmp/gold/data.bin", LOCAL)
    with pytest.raises(FioError, match=r"ran on '/tmp/gold/data.bin', not on the guarded target"):
        check_target(output, "/tmp/gold/other.bin", LOCAL)


@pytest.mark.parametrize("machine", [LOCAL, Shell()], ids=["here", "by-commands"])
def test_fio_reporting_io_on_another_disk_fails(loop_device: Any, machine: Machine) -> None:
    dev: Path = loop_device(64)
    jobs = _output("two_jobs_stonewall.json").jobs
    moved = tuple(dataclasses.replace(j, options={**j.options, "filename": str(dev)}) for j in jobs)
    check_target(_output("two_jobs_stonewall.json", jobs=moved, disk_util=()), str(dev), machine)
    mine = ({"name": dev.name},)
    check_target(_output("two_jobs_stonewall.json", jobs=moved, disk_util=mine), str(dev), machine)
    other = ({"name": dev.name}, {"name": "vda"})
    with pytest.raises(FioError, match=r"fio reported I/O on vda, not on the guarded target"):
        check_target(
            _output("two_jobs_stonewall.json", jobs=moved, disk_util=other), str(dev), machine
        )


def test_lock_holders_are_read_from_proc_locks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "dev"
    target.write_bytes(b"")
    st = target.stat()
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    held = tmp_path / "locks"
    held.write_text(
        f"1: FLOCK  ADVISORY  WRITE 4242 {inode} 0 EOF\n"
        f"1: -> FLOCK  ADVISORY  WRITE 5151 {inode} 0 EOF\n"  # a waiter, not a holder
        f"2: POSIX  ADVISORY  WRITE 6161 {inode} 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 7171 00:01:1 0 EOF\n"
    )
    monkeypatch.setattr(locks, "PROC_LOCKS", held)
    assert node.lock_holders(st) == [4242]


def test_a_second_lock_is_refused_naming_the_holder(tmp_path: Path) -> None:
    target = tmp_path / "device.img"
    target.write_bytes(b"")
    # -o: only flock holds the lock, not the sleep it starts
    holder = subprocess.Popen(["flock", "-o", str(target), "sleep", "30"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while str(holder.pid) not in Path("/proc/locks").read_text():
            assert time.monotonic() < deadline, "flock did not take its lock"
            time.sleep(0.05)
        with pytest.raises(SafetyError) as info:
            DeviceLock(HereLocks(), str(target)).acquire()
        assert str(info.value) == (
            f"refusing {target}: it is locked by pid {holder.pid} (flock -o {target} sleep 30),"
            " another pytest-ssd session or a tool using 'flock' (one session per device);"
            " wait for it to finish"
        )
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
    lock = DeviceLock(HereLocks(), str(target))
    lock.acquire()
    lock.release()
    lock.release()  # twice is fine


def test_a_folder_is_no_target_to_lock(tmp_path: Path) -> None:
    """The holder locks a block device or a regular file only (as a test host's does)."""
    with pytest.raises(SafetyError) as refused:
        DeviceLock(HereLocks(), str(tmp_path)).acquire()
    assert str(refused.value) == f"refusing {tmp_path}: it is not a block device or a file there"


def test_a_file_locked_is_claimed_without_an_exclusive_open(tmp_path: Path) -> None:
    target = tmp_path / "device.img"
    target.write_bytes(b"")
    holder = HereLocks()
    lock = DeviceLock(holder, str(target))
    lock.acquire()
    st = target.stat()
    assert lock.key == ("file", st.st_dev, st.st_ino) and lock.pid == os.getpid()
    lock.claim()
    holder.close()
    again = DeviceLock(HereLocks(), str(target))
    again.acquire()  # closing the holder let every lock go
    again.release()
