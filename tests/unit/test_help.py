"""``pytest --help`` and ``pytest-ssd --help``: options grouped, choices shown, no absent docs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import run_cli

#: the groups of ``pytest --help``, in order, and an option of each
GROUPS = {
    "pytest-ssd: device and safety:": "--dut=DEVICE",
    "pytest-ssd: method:": "--ssd-profile={quick,full}",
    "pytest-ssd: output:": "--ssd-report-dir=DIR",
    "pytest-ssd: comparison:": "--ssd-compare=LABEL|RUN-ID|all",
    "pytest-ssd: test hosts:": "--ssd-ssh-config=FILE",
}
#: references to documents that are not in the repository (METHOD.md, the seeds)
PRIVATE = re.compile(r"METHOD|\bseeds?\b|§")


def _help(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=cwd)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout


def test_pytest_help_groups_the_options_with_their_choices(tmp_path: Path) -> None:
    text = _help([sys.executable, "-m", "pytest", "--help"], tmp_path)
    starts = [text.index(title) for title in GROUPS]
    assert starts == sorted(starts), "the groups in order"
    for (title, option), start, end in zip(
        GROUPS.items(), starts, [*starts[1:], len(text)], strict=True
    ):
        assert option in text[start:end], f"{option} under {title}"
    ours = text[starts[0] : text.index("[pytest] configuration options")]
    assert "--dut-class={cssd,essd-ri,essd-mu,essd-wi}" in ours
    dut = ours[ours.index("--dut=DEVICE") : ours.index("--ssd-confirm")]
    assert "ssh://" in dut and "scratch" in dut
    options = re.findall(r"^  (--[a-z-]+)", ours, re.M)
    assert len(options) == len(set(options)) >= 20, "each option once"
    assert not PRIVATE.findall(ours), "no reference to a document not in the repository"


@pytest.mark.parametrize("command", [[], ["list"], ["report"], ["compare"], ["export"], ["sync"]])
def test_pytest_ssd_help_cites_no_private_document(command: list[str], tmp_path: Path) -> None:
    done = run_cli(*command, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not PRIVATE.findall(done.stdout)
