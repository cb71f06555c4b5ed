"""Purge for real: blkdiscard on a direct-I/O loop device, fallocate on a regular file.

The loop driver turns a discard into holes punched in its backing file, so a
purged loop device reads back zeroes and its backing file gives its blocks back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.identity import identify
from pytest_ssd.errors import PurgeError, SafetyError
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.purge import PurgeMethod, Tools, choose, purge
from tests.e2e import test_safety
from tests.e2e.conftest import digest
from tests.unit.purge_fakes import Recorder

#: an ext4-signed loop device, and that device mounted: the safety tests' own fixtures
ext4_device = test_safety.ext4_device
mounted = test_safety.mounted
MIB = 1 << 20
PATTERN = bytes(range(1, 256)) + b"\xa5"  # no zero byte anywhere


def _fill(path: Path, size: int) -> None:
    """Write a non-zero pattern over the whole target and make it durable."""
    chunk = PATTERN * (MIB // len(PATTERN))
    fd = os.open(path, os.O_WRONLY)
    try:
        for offset in range(0, size, MIB):
            os.pwrite(fd, chunk[: size - offset], offset)
        os.fsync(fd)
    finally:
        os.close(fd)


def _all_zero(path: Path) -> bool:
    with path.open("rb") as fh:
        return all(not any(block) for block in iter(lambda: fh.read(MIB), b""))


def test_loop_device_discard_reads_zeroes_and_frees_the_backing_file(
    loop_device: Any, tmp_path: Path
) -> None:
    dev: Path = loop_device(64)
    _fill(dev, 64 * MIB)
    identity = identify(dev, LOCAL)
    assert identity.backing_file is not None
    backing = Path(identity.backing_file)
    before = backing.stat().st_blocks
    assert before * 512 >= 64 * MIB  # fully allocated by the fill
    assert choose(identity, machine=LOCAL) is PurgeMethod.DISCARD

    artifacts = tmp_path / "artifacts"
    result = purge(identity, PurgeMethod.DISCARD, artifacts=artifacts, machine=LOCAL)

    after = backing.stat().st_blocks
    assert after * 512 < MIB, (before, after)
    assert backing.stat().st_size == 64 * MIB
    assert _all_zero(dev)
    check = result.verification
    assert (check.promise, check.ok, check.block_size) == ("zeroes", True, 512)
    assert check.sampled == check.matching == 66
    assert result.commands == (f"blkdiscard --force {dev}",)
    assert result.weaker is not None and "weaker than sanitize or format" in result.weaker
    assert str(backing) in result.weaker
    assert (artifacts / "blkdiscard.rc").read_text() == "0\n"


def test_regular_file_punch_hole(tmp_path: Path) -> None:
    target = tmp_path / "dut.img"
    target.write_bytes(b"")
    size = 8 * MIB + 1000  # a partial last block too
    with target.open("r+b") as fh:
        fh.truncate(size)
    _fill(target, size)
    assert target.stat().st_blocks * 512 >= size
    identity = identify(target, LOCAL)
    assert choose(identity, machine=LOCAL) is PurgeMethod.PUNCH_HOLE

    result = purge(
        identity, PurgeMethod.PUNCH_HOLE, artifacts=tmp_path / "artifacts", machine=LOCAL
    )

    assert target.stat().st_size == size  # --keep-size
    assert target.stat().st_blocks == 0
    assert _all_zero(target)
    check = result.verification
    assert (check.promise, check.ok) == ("zeroes", True)
    assert check.sampled == check.matching == 66
    block = os.statvfs(target).f_bsize
    length = -(-size // block) * block  # whole file-system blocks
    assert result.commands == (
        f"fallocate --punch-hole --keep-size --offset 0 --length {length} {target}",
    )


def test_discard_that_leaves_data_fails_the_read_back(loop_device: Any, tmp_path: Path) -> None:
    """A 'purge' that does nothing (true instead of blkdiscard) must not pass the check."""
    dev: Path = loop_device(16)
    _fill(dev, 16 * MIB)
    tools = Tools(which=lambda program, hint: "true" if program == "blkdiscard" else program)
    with pytest.raises(PurgeError, match="failed its read-back check: 66 of 66 sampled blocks"):
        purge(
            identify(dev, LOCAL),
            PurgeMethod.DISCARD,
            artifacts=tmp_path / "a",
            tools=tools,
            machine=LOCAL,
        )


def _refused(dev: Path, tmp_path: Path, *needles: str) -> None:
    identity = identify(dev, LOCAL)
    before = digest(dev)
    recorder = Recorder()
    artifacts = tmp_path / "artifacts"
    with pytest.raises(SafetyError) as info:
        purge(
            identity,
            PurgeMethod.DISCARD,
            artifacts=artifacts,
            tools=Tools(run=recorder),
            machine=LOCAL,
        )
    for needle in (f"refusing to write to {dev}", *needles):
        assert needle in str(info.value)
    assert recorder.calls == []
    assert not artifacts.exists()
    assert digest(dev) == before


def test_mounted_device_is_refused_before_any_command(
    mounted: tuple[Path, Path], tmp_path: Path
) -> None:
    dev, mnt = mounted
    _refused(dev, tmp_path, str(mnt))


def test_ext4_signature_is_refused_before_any_command(ext4_device: Path, tmp_path: Path) -> None:
    _refused(ext4_device, tmp_path, "ext4", "wipefs -a")


def test_a_forced_purge_the_device_cannot_do_stops_the_run_before_the_plan(
    run_ssd: Any, tmp_path: Path
) -> None:
    # caught once only at the test's set-up, after the plan had promised it
    run = run_ssd("--dut=scratch:64M", "--ssd-purge=format-ses1")
    assert run.result.ret == 4
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "--ssd-purge=format-ses1 cannot purge /dev/loop" in errors[0]
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "pytest-ssd plan" not in out and "Traceback" not in out
    assert not (tmp_path / "reports").exists()
