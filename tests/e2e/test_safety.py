"""The safety guard through the real plugin: refusals leave the target byte-identical."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import digest

USAGE_ERROR = 4


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


@pytest.fixture
def ext4_device(loop_device: Any) -> Path:
    dev: Path = loop_device(64)
    # no lazy init: the kernel would write inode tables and journal after the mount
    _sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(dev))
    return dev


@pytest.fixture
def mounted(ext4_device: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # read-only: a read-write ext4 keeps writing its metadata for seconds after the mount
    # (seen here: two blocks of it, even after syncfs), which the byte comparison would blame
    # on pytest-ssd; the guard refuses any mounted device alike
    _sh("mount", "-o", "ro", str(ext4_device), str(mnt))
    try:
        yield ext4_device, mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False, capture_output=True, timeout=60)


def _refused(run: Any, *needles: str) -> str:
    """The one error line of a refused run; asserts the exit code and that no test ran."""
    assert run.result.ret == USAGE_ERROR, run.result.stdout.str() + run.result.stderr.str()
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, run.result.errlines
    assert "Traceback" not in run.result.stderr.str()
    for needle in needles:
        assert needle in errors[0]
    return errors[0]


def test_mounted_filesystem_is_refused(run_ssd: Any, mounted: tuple[Path, Path]) -> None:
    dev, mnt = mounted
    before = digest(dev)
    run = run_ssd(f"--dut={dev}", f"--ssd-confirm={dev}")
    _refused(run, f"refusing to write to {dev}", str(mnt))
    assert digest(dev) == before


def test_filesystem_signature_is_refused(run_ssd: Any, ext4_device: Path) -> None:
    before = digest(ext4_device)
    run = run_ssd(f"--dut={ext4_device}", f"--ssd-confirm={ext4_device}")
    _refused(run, str(ext4_device), "ext4")
    assert digest(ext4_device) == before


def test_device_held_open_exclusively_is_refused(run_ssd: Any, loop_device: Any) -> None:
    dev: Path = loop_device(64)
    before = digest(dev)
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        run = run_ssd(f"--dut={dev}", f"--ssd-confirm={dev}")
    finally:
        os.close(fd)
    _refused(run, str(dev), "in use")
    assert digest(dev) == before


def test_missing_path_is_refused_and_not_created(run_ssd: Any, tmp_path: Path) -> None:
    for missing in (tmp_path / "typo.img", Path("/dev/nvme97n1")):
        run = run_ssd(f"--dut={missing}", f"--ssd-confirm={missing}")
        _refused(run, str(missing), "does not exist")
        assert not missing.exists()


def test_missing_or_wrong_confirmation_says_what_to_add(run_ssd: Any, loop_device: Any) -> None:
    dev: Path = loop_device(64)
    before = digest(dev)
    line = _refused(run_ssd(f"--dut={dev}"), str(dev), f"--ssd-confirm={dev}")
    assert "64.0 MiB" in line or "0.06 GiB" in line or "67.1 MB" in line, line
    _refused(run_ssd(f"--dut={dev}", "--ssd-confirm=SOMETHING-ELSE"), f"--ssd-confirm={dev}")
    assert digest(dev) == before


def test_readonly_runs_reads_on_a_device_with_data_and_skips_writes(
    run_ssd: Any, ext4_device: Path
) -> None:
    before = digest(ext4_device)
    run = run_ssd(f"--dut={ext4_device}", "--ssd-readonly", "-rs")
    run.result.assert_outcomes(passed=2, skipped=2)
    assert "--ssd-readonly: this test writes to" in run.result.stdout.str()
    assert digest(ext4_device) == before
