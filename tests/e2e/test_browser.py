"""The report of a real smoke run, opened in headless Chromium as a reader would open it.

Chromium is installed (Debian's package) when missing and we are root; the test is skipped,
with the reason, only where that is impossible.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import RunInfo
from pytest_ssd.report.build import page
from pytest_ssd.report.sections import build
from tests.browser import check_page, find_chromium
from tests.unit.test_sections_csd import load, slower

# The report's own sections, the smoke suite's section, and pytest-html's results table.
REQUIRED = ("#ssd-devices", "#ssd-environment", "#ssd-suite-smoke", "#results-table")
APT_TIMEOUT = 600.0
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: the window a reviewer reads the report in (issue 19): nothing cut, nothing squeezed
READING_WIDTH = 1400


def _run_in_group(argv: list[str], timeout: float) -> tuple[int, str]:
    """Run *argv* in its own process group (killed on timeout or exit): exit code and output."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"{' '.join(argv)} timed out after {timeout:.0f} s"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return proc.returncode, out


def _install_chromium() -> str:
    """Install Debian's chromium; the reason it cannot be installed, or "" when it is."""
    if os.geteuid() != 0:
        return "chromium is not installed and installing it needs root"
    if shutil.which("apt-get") is None:
        return "chromium is not installed and there is no apt-get to install it"
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        rc, out = _run_in_group(argv, APT_TIMEOUT)
        if rc != 0:
            return f"cannot install chromium: {' '.join(argv)} failed ({rc}): {out[-1000:]}"
    return "" if find_chromium() else "apt-get installed chromium but it is not on PATH"


@pytest.fixture
def chromium() -> str:
    """The browser's path; installed when missing, else the test is skipped with the reason."""
    found = find_chromium()
    if found is None:
        reason = _install_chromium()
        found = find_chromium()
        if found is None:
            pytest.skip(reason)
    return found


@pytest.fixture
def artifacts(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """The test's artifact folder (under tmp_path), also kept in $SSD_TEST_ARTIFACTS if set."""
    folder = tmp_path / "artifacts"
    folder.mkdir()
    yield folder
    keep = os.environ.get("SSD_TEST_ARTIFACTS")
    if keep:
        shutil.copytree(folder, Path(keep) / request.node.name, dirs_exist_ok=True)


def test_report_renders_in_chromium(chromium: str, run_ssd: Any, artifacts: Path) -> None:
    run = run_ssd("--dut=scratch:256M")
    run.result.assert_outcomes(passed=4)

    screenshot = artifacts / "report.png"
    check = check_page(
        run.run_dir / "report.html",
        (*REQUIRED, "#ssd-summary", "#ssd-results"),
        screenshot=screenshot,
        width=READING_WIDTH,
        sections_to=artifacts / "sections",
    )
    print(f"screenshot: {screenshot}")
    print(f"sections: {check.sections}; images: {check.images}")

    assert check.problems() == [], "\n".join(check.problems())
    assert check.images >= 1, "the summary chart at least"
    data = screenshot.read_bytes()
    assert data.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width >= 800 and height >= 600, (width, height)
    assert len(data) > 20_000, "a rendered page, not a blank one"
    # the contents: every section, every figure and pytest-html's results, one click away
    assert {"ssd-devices", "ssd-suite-smoke", "ssd-results"} <= set(check.links)
    assert check.figures and set(check.figures) <= set(check.links)
    assert set(check.section_shots) == set(check.sections)
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in check.section_shots.values())
    html = (run.run_dir / "report.html").read_text()
    assert "No log output captured." not in html, "a test that printed nothing has no log box"


def test_a_two_drive_csd_report_reads_in_a_1400_px_window(chromium: str, artifacts: Path) -> None:
    # the widest figures of all: every csd comparison with two drives (golden quick-run results)
    fast = load()
    drives = [fast, slower(load("slow drive", "run-b"))]
    run = RunInfo("run-a", "2026-11-25T00:00:00", None, True, {}, "", {}, (fast.drive,))
    sections = build(drives, 1, [run], artifacts / "figures")
    path = artifacts / "csd.html"
    path.write_text(page("two drives", "".join(s.html() for s in sections)))

    check = check_page(
        path,
        ("#ssd-summary", "#ssd-suite-csd"),
        screenshot=artifacts / "csd.png",
        width=READING_WIDTH,
        sections_to=artifacts / "sections",
        timeout=120,
    )
    print(f"sections: {check.sections}; images: {check.images}; shots: {artifacts / 'sections'}")
    assert check.problems() == [], "\n".join(check.problems())
    assert len(check.figures) == check.images > 20
    assert set(check.figures) <= set(check.links), "every graph is linked from the contents"
    assert (artifacts / "sections" / "ssd-suite-csd.png").is_file()
