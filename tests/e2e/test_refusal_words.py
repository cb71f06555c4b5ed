"""Refusals that name what the user meant: a bare device name, the disk '/' is on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import digest
from tests.e2e.test_safety import _refused
from tests.unit.test_guard import _root_device


def test_a_bare_device_name_is_refused_suggesting_its_dev_node(
    run_ssd: Any, random_loop: Path, pytester: pytest.Pytester
) -> None:
    before = digest(random_loop)
    name = random_loop.name  # loopN: resolved against the working folder, where it is not
    run = run_ssd(f"--dut={name}", f"--ssd-confirm={random_loop}")
    line = _refused(run)
    assert line == (
        f"ERROR: cannot read {pytester.path / name}: it does not exist; did you mean {random_loop}?"
    )
    assert not (pytester.path / name).exists() and not (run.report_dir / "latest").exists()
    assert digest(random_loop) == before


def test_a_typo_that_names_no_device_still_says_check_the_path(
    run_ssd: Any, pytester: pytest.Pytester
) -> None:
    run = run_ssd("--dut=nvme97n1")
    line = _refused(run)
    assert line.endswith(f"{pytester.path / 'nvme97n1'}: it does not exist; check the path")


def test_the_root_disk_is_refused_as_the_running_system_not_by_the_lock(run_ssd: Any) -> None:
    """'/' is on it: that is the reason shown, not the lock's open failing (EPERM on this VM)."""
    root = _root_device()
    if root is None:
        pytest.skip("'/' is not on a block device here")
    run = run_ssd(f"--dut={root}", f"--ssd-confirm={root}")
    line = _refused(run)  # reads only: the guard never writes, and nothing ran
    assert line.startswith(
        f"ERROR: refusing to write to {root}: it holds the running system's root filesystem (/)"
    ), line
    assert not (run.report_dir / "latest").exists()
