"""``./run``: its usage and refusals are plain lines (no comment marks, no bash line numbers)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[2] / "run"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUN), *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("args", [[], ["nosuch"]])
def test_usage_is_printed_without_comment_marks(args: list[str]) -> None:
    done = _run(*args)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0].startswith("pytest-ssd's two commands")
    assert any(line.startswith("  ./run tests [pytest args]") for line in lines)
    assert not any(line.startswith("#") for line in lines), done.stderr


@pytest.mark.parametrize(("args", "tail"), [([], ""), (["nosuch"], " (not nosuch)")])
def test_suite_without_a_known_name_is_one_line(args: list[str], tail: str) -> None:
    done = _run("suite", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "usage: ./run suite NAME [pytest args]: NAME is one of"
        f" csd, datasheet, esd, qual, smoke, snia, wsat{tail}\n"
    )
