"""Running the ``pytest-ssd`` command line as a user does: in a process of its own.

Most tests call :func:`pytest_ssd.cli.main` in-process; the few that need what only a
real process shows (the console script, an exit code from a crash, another ``PYTHONPATH``,
another working folder) use :func:`run_cli`, which also checks that nothing it printed
is a traceback.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def cli_argv() -> list[str]:
    """The console script pip installed beside the interpreter (``.venv/bin``, maybe not on
    PATH), else the one on PATH, else ``python -m pytest_ssd.cli``."""
    beside = Path(sys.executable).with_name("pytest-ssd")
    script = str(beside) if beside.exists() else shutil.which("pytest-ssd")
    return [script] if script else [sys.executable, "-m", "pytest_ssd.cli"]


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``pytest-ssd ARGS`` to its end (its output captured); no traceback in what it printed."""
    done = subprocess.run(
        [*cli_argv(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done
