"""Memory: peak resident set of ``pytest suites/csd --dut=scratch:4G`` (quick profile).

The suite runs in a child interpreter; its peak is the RSS high-water mark of the
largest process among it and the processes it waited for (fio included), as the
kernel keeps it: ``getrusage(RUSAGE_CHILDREN).ru_maxrss``, KiB on Linux.
Whatever suites/csd holds is run; failing tests are reported, not fatal: the
figure is the memory.  Target: < 600 MB.
Run: ``python -m tests.benchmarks.memory [--report-only]``.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import tempfile
import time

from tests.benchmarks.lab import REPO, verdict

TARGET_MB = 600.0
TIMEOUT_S = 3600
SUMMARY = re.compile(r"^=+ (.* in [\d.]+s.*) =+$", re.MULTILINE)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ssd-memory-") as tmp:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            str(REPO / "suites" / "csd"),
            "--dut=scratch:4G",
            f"--ssd-report-dir={tmp}",
            "-p",
            "no:cacheprovider",
        ]
        start = time.monotonic()
        done = subprocess.run(
            argv, check=False, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO
        )
        wall = time.monotonic() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e6
    found = SUMMARY.findall(done.stdout)
    outcome = found[-1] if found else f"no summary line; exit {done.returncode}"
    print(f"pytest suites/csd --dut=scratch:4G: {outcome} (exit {done.returncode}, {wall:.0f} s)")
    if done.returncode not in (0, 1):
        print((done.stdout + done.stderr).strip()[-2000:])
    ok = peak_mb < TARGET_MB
    print(verdict("memory", f"peak RSS {peak_mb:,.0f} MB", f"< {TARGET_MB:.0f} MB", ok))
    return 0 if ok or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
