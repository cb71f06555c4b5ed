"""csd quick's report of one drive, rebuilt from the database (``pytest-ssd report``).

A csd quick run on ``scratch:4G`` (about 5 minutes; ``--db PATH`` reuses a run's
database instead), then ``pytest-ssd report latest`` in a process of its own: its
wall time against the target, ≤ 10 s on the 2-core VM (it was 86 s when every graph
was drawn five times), and its CPU time.
Run: ``python -m tests.benchmarks.csd_report [--report-only] [--db PATH]``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.lab import verdict

REPO = Path(__file__).resolve().parents[2]
TARGET_S = 10.0


def csd_run(reports: Path) -> Path:
    argv = [sys.executable, "-m", "pytest", str(REPO / "suites" / "csd"), "--dut=scratch:4G"]
    argv += ["-q", "-p", "no:cacheprovider", f"--ssd-report-dir={reports}"]
    subprocess.run(argv, cwd=reports, check=True, timeout=3600, stdout=subprocess.DEVNULL)
    return reports / "results.sqlite"


def _report(db: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``pytest-ssd report latest``."""
    argv = [sys.executable, "-m", "pytest_ssd.cli", "report", f"--db={db}", "-o", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.run([*argv, "latest"], check=True, timeout=600, **quiet)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> int:
    given = sys.argv[sys.argv.index("--db") + 1] if "--db" in sys.argv else None
    with tempfile.TemporaryDirectory(prefix="ssd-csd-report-") as tmp:
        db = Path(given) if given else csd_run(Path(tmp))
        wall, cpu = _report(db, Path(tmp) / "report.html")
    load = os.getloadavg()[0]
    ok = wall <= TARGET_S
    print(f"csd quick, one drive (scratch:4G): CPU {cpu:.1f} s, load average {load:.1f}")
    print(verdict("csd quick report build", f"{wall:.1f} s", f"<= {TARGET_S:.0f} s", ok))
    return 0 if ok or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
