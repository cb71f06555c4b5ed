"""Start-up: a local session's, from pytest's start to its first test's call.

One test that asks for the ``ssd`` fixture, on a 64 MiB regular file here (``--dut=FILE``,
confirmed: no root, no loop device), run *N* times (default 5) in fresh interpreters: each run's
time from the moment the interpreter is started to the moment the test's body runs
(the plugin's configure, this machine's tune recovery and settings record, the device
opened and guarded, collection, the fixture's set-up).  The median is the figure; the
target is not to be slower than the revision compared (``./run bench --against REV``).
``--tree PATH``: the pytest-ssd tree measured (its ``pytest_ssd`` put first on
``PYTHONPATH``), this one by default.
Run: ``python -m tests.benchmarks.startup [--runs N] [--tree PATH] [--report-only]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.lab import REPO

TIMEOUT_S = 300
STAMP_ENV = "SSD_BENCH_STARTED"
#: the first test: it stamps the moment its body runs
TEST = f"""
import os
import time


def test_first(ssd):
    with open(os.environ["{STAMP_ENV}"], "w") as fh:
        fh.write(repr(time.time()))
"""


def once(tree: Path, work: Path, n: int) -> float:
    """Seconds from the interpreter's start to the test's body, in run *n*."""
    stamp = work / f"stamp-{n}"
    env = {**os.environ, STAMP_ENV: str(stamp), "PYTHONPATH": str(tree)}
    dut = work / "dut"
    argv = [sys.executable, "-m", "pytest", str(work / "test_first.py")]
    argv += [f"--dut={dut}", f"--ssd-confirm={dut}"]
    argv += [f"--ssd-report-dir={work / f'reports-{n}'}", "-p", "no:cacheprovider", "-q"]
    start = time.time()
    done = subprocess.run(
        argv, check=False, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=work, env=env
    )
    if done.returncode != 0 or not stamp.exists():
        said = (done.stdout + done.stderr)[-2000:]
        raise SystemExit(f"start-up run failed (exit {done.returncode}):\n{said}")
    return float(stamp.read_text()) - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=REPO)
    parser.add_argument("--report-only", action="store_true")
    args, _ = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="ssd-startup-") as tmp:
        work = Path(tmp)
        (work / "test_first.py").write_text(TEST)
        with (work / "dut").open("wb") as fh:
            fh.truncate(64 * 2**20)
        once(args.tree, work, 0)  # bytecode written, caches warm: not counted
        times = [once(args.tree, work, n) for n in range(1, args.runs + 1)]
    shown = ", ".join(f"{t:.3f}" for t in times)
    print(f"start-up of a local session, {args.runs} runs: {shown} s")
    median = statistics.median(times)
    print(
        f"start-up: {median:.3f} s (median of {args.runs}, load {os.getloadavg()[0]:.1f})"
        "   target not slower than the revision compared   REPORTED"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
