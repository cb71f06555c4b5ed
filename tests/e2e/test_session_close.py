"""The session's end: every step of closing runs, even when one before it fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import attached_loops

#: a plugin that breaks putting this machine's settings back, the first step of closing
BREAKER = """
from pytest_ssd.host.tune import Tuner


def _broken(self):
    raise OSError("restoring the settings failed (the test's breaker)")


Tuner.restore = _broken
"""


def _release(reports: Path, cwd: Path) -> None:
    """A later session releases what a session left attached in *reports* (even refused)."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dut=/dev/nvme97n1"]
    argv.append(f"--ssd-report-dir={reports}")
    subprocess.run(argv, check=False, cwd=cwd, capture_output=True, timeout=120)


def test_a_failing_restore_still_releases_the_lock_and_the_scratch(
    run_ssd: Any, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(ssd_breaker=BREAKER)
    reports = tmp_path / "reports"
    try:
        run = run_ssd("--dut=scratch:128M", "-p", "ssd_breaker", "-k", "no_test_is_named_so")
        out = run.result.stdout.str() + run.result.stderr.str()
        assert "restoring the settings failed" in out, out
        assert str(reports) not in attached_loops(), "the scratch device is still attached"
        assert not list(reports.glob(".scratch/*")), "its backing file is still there"
    finally:
        _release(reports, tmp_path)
    assert str(reports) not in attached_loops()
