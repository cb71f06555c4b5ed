"""The guard walks down what the target is built on, and counts any process holding it open.

This kernel has no device-mapper and no md: stacking is covered with a loop device
set up on another loop device (``losetup --offset``), which the kernel shows neither
as a holder nor as a slave, only as the upper device's backing file.  Every refusal
leaves the lower device byte-identical.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import digest
from tests.e2e.test_safety_session import _one_error

OFFSET = 64 << 20


def _sh(*argv: str) -> str:
    done = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


@pytest.fixture
def stacked(loop_device: Any) -> Iterator[Callable[[Path], Path]]:
    """``stacked(lower)``: a loop device at 64 MiB into *lower*; detached at teardown."""
    made: list[str] = []

    def make(lower: Path) -> Path:
        made.append(_sh("losetup", "--find", "--show", f"--offset={OFFSET}", str(lower)))
        return Path(made[-1])

    yield make
    for dev in reversed(made):
        subprocess.run(["losetup", "-d", dev], check=False, capture_output=True, timeout=30)


@pytest.fixture
def lower_ext4(loop_device: Any) -> Path:
    dev: Path = loop_device(128)
    _sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(dev))
    return dev


def test_a_loop_on_a_device_with_a_mounted_filesystem_is_refused(
    run_ssd: Any, lower_ext4: Path, stacked: Any, tmp_path: Path
) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # read-only: a read-write ext4 writes metadata for seconds after the mount (test_safety)
    _sh("mount", "-o", "ro", str(lower_ext4), str(mnt))
    try:
        upper = stacked(lower_ext4)
        before = digest(lower_ext4)
        line = _one_error(run_ssd(f"--dut={upper}", f"--ssd-confirm={upper}"))
        after = digest(lower_ext4)  # while mounted, as before: the unmount has its own writes
    finally:
        subprocess.run(["umount", str(mnt)], check=False, capture_output=True, timeout=60)
    assert line == (
        f"ERROR: refusing to write to {upper}: it is built on {lower_ext4}, which is mounted at"
        f" {mnt}; unmount it first or use --ssd-readonly"
    )
    assert after == before


def test_a_loop_on_a_device_holding_a_filesystem_is_refused(
    run_ssd: Any, lower_ext4: Path, stacked: Any
) -> None:
    upper = stacked(lower_ext4)
    before = digest(lower_ext4)
    line = _one_error(run_ssd(f"--dut={upper}", f"--ssd-confirm={upper}"))
    assert f"refusing to write to {upper}: it is built on {lower_ext4}, which holds a ext4" in line
    assert f"'wipefs -a {lower_ext4}'" in line
    assert digest(lower_ext4) == before


@contextlib.contextmanager
def held_open(dev: Path) -> Iterator[int]:
    """A ``sleep`` holding *dev* open read-only, no O_EXCL (the exclusive probe cannot see
    it); yields its pid."""
    with dev.open("rb") as held:
        reader = subprocess.Popen(["sleep", "60"], stdin=held)
    try:
        yield reader.pid
    finally:
        reader.kill()
        reader.wait(timeout=30)


def test_a_device_open_in_another_process_is_refused_naming_it(
    run_ssd: Any, random_loop: Path
) -> None:
    before = digest(random_loop)
    with held_open(random_loop) as reader:
        line = _one_error(run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}"))
    assert line == (
        f"ERROR: refusing to write to {random_loop}: it is open in pid {reader} (sleep 60);"
        " close that program first or use --ssd-readonly"
    )
    assert digest(random_loop) == before


def test_a_device_below_open_in_another_process_is_refused(
    run_ssd: Any, loop_device: Any, stacked: Any
) -> None:
    lower: Path = loop_device(128)
    upper = stacked(lower)
    with held_open(lower) as reader:
        line = _one_error(run_ssd(f"--dut={upper}", f"--ssd-confirm={upper}"))
    assert f"it is built on {lower}, which is open in pid {reader} (sleep 60)" in line


def test_a_loop_on_a_clean_device_is_measured(run_ssd: Any, loop_device: Any, stacked: Any) -> None:
    lower: Path = loop_device(128)
    upper = stacked(lower)
    run = run_ssd(f"--dut={upper}", f"--ssd-confirm={upper}", "-k", "rnd-write")
    run.result.assert_outcomes(passed=1, deselected=3)
    (device,) = run.results()["devices"].values()
    assert device["path"] == str(upper)
