"""What the benchmarks share: a direct-I/O loop device and a pytest-ssd run in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def sh(*argv: str, timeout: float = 600) -> str:
    done = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=timeout)
    return done.stdout


@contextmanager
def loop_device(directory: Path, size_mib: int) -> Iterator[Path]:
    """A sparse file attached as a direct-I/O loop device, detached afterwards."""
    backing = directory / "bench.img"
    with backing.open("wb") as fh:
        fh.truncate(size_mib << 20)
    dev = Path(sh("losetup", "--find", "--show", "--direct-io=on", str(backing)).strip())
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", str(dev)], check=False, timeout=60)


@dataclass
class PytestRun:
    wall_s: float
    run_dir: Path
    output: str

    def results(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / "results.json").read_text())
        return data


def run_pytest(target: Path, report_dir: Path, *args: str) -> PytestRun:
    """Run pytest-ssd on *target* in a fresh interpreter; fail loudly when it fails."""
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(target),
        f"--ssd-report-dir={report_dir}",
        "-p",
        "no:cacheprovider",
        "-q",
        *args,
    ]
    start = time.monotonic()
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return PytestRun(wall, (report_dir / "latest").resolve(), done.stdout)


def verdict(name: str, figure: str, target: str, ok: bool) -> str:
    return f"{name}: {figure}   target {target}   {'MET' if ok else 'MISSED'}"
