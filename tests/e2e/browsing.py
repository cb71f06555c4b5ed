"""A browser for the report tests: Debian's chromium (installed when missing), artifacts kept.

The fixtures ``chromium`` and ``artifacts`` are the e2e conftest's; any report test may
check its page in a 1,400 px window with :func:`tests.browser.check_page`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import check_page, find_chromium

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


def reads_in_a_window(html: Path, section: str, artifacts: Path) -> None:
    """*html*'s *section* in a 1,400 px window: nothing cut or squeezed, every graph linked.

    One screenshot per section is saved under ``artifacts/sections``.
    """
    check = check_page(
        html,
        (f"#{section}", "#ssd-summary"),
        screenshot=artifacts / f"{section}.png",
        width=READING_WIDTH,
        sections_to=artifacts / "sections",
        timeout=120,
    )
    assert check.problems() == [], "\n".join(check.problems())
    assert check.figures and set(check.figures) <= set(check.links), "every graph in the contents"
    assert (artifacts / "sections" / f"{section}.png").read_bytes().startswith(PNG_MAGIC)
