"""What a run was measured on: host, kernel, CPU, tool versions, METHOD §9's settings."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ssd.errors import ToolError
from pytest_ssd.proc import run, which
from pytest_ssd.secret import masked
from pytest_ssd.version import __version__

if TYPE_CHECKING:
    from pytest_ssd.host import HostRecord


def _program() -> list[str]:
    """How pytest was started: ``pytest``, or ``python -m pytest`` (argv[0] is __main__.py)."""
    name = Path(sys.argv[0]).name
    return ["python", "-m", "pytest"] if name == "__main__.py" else [name]


def _cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def _tool_version(program: str, *args: str) -> str | None:
    try:
        path = which(program, "")
    except ToolError:
        return None
    done = run([path, *args], timeout=30)
    first = (done.stdout or done.stderr).strip().splitlines()
    return first[0].strip() if done.returncode == 0 and first else None


def collect(args: list[str], host: HostRecord | None = None) -> dict[str, Any]:
    """The run's environment, as recorded in results.json, the databases and the report.

    *host* adds the settings METHOD §9 controls, their warnings and what --ssd-tune did.
    Every secret in it (a database URL's password in *args*) is masked: it is written.
    """
    uname = os.uname()
    environment = {
        "host": socket.gethostname(),
        "kernel": f"{uname.sysname} {uname.release}",
        "machine": uname.machine,
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "pytest": pytest.__version__,
        "pytest_ssd": __version__,
        "fio": _tool_version("fio", "--version"),
        "nvme_cli": _tool_version("nvme", "version"),
        "argv": [*_program(), *args],
        **(host.as_dict() if host is not None else {}),
    }
    return dict(masked(environment))
