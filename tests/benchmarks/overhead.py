"""Overhead: wall time of the smoke suite minus the fio time it asked for, per test.

Time-based jobs ask for runtime + ramp; jobs that move an amount of data (the
prefill) count with the runtime fio reports for them.  Target: < 0.5 s per test.
Run: ``python -m tests.benchmarks.overhead``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.lab import REPO, run_pytest, verdict

TARGET_S = 0.5


def _seconds(text: str) -> float:
    """fio's duration as pytest-ssd renders it: '3' or '300ms'."""
    return float(text[:-2]) / 1000 if text.endswith("ms") else float(text)


def asked_seconds(artifacts: Path) -> tuple[float, float]:
    """(fio time asked for, wall time of the fio processes) over every fio run of the session."""
    asked = processes = 0.0
    for stdout in artifacts.rglob("fio.stdout"):
        data = json.loads(stdout.read_text()[stdout.read_text().index("{") :])
        for job in data["jobs"]:
            opts = {**data.get("global options", {}), **job["job options"]}
            if "runtime" in opts:
                asked += _seconds(opts["runtime"]) + _seconds(opts.get("ramp_time", "0"))
            else:
                asked += job["job_runtime"] / 1000
        processes += float((stdout.parent / "fio.seconds").read_text())
    return asked, processes


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ssd-overhead-") as tmp:
        run = run_pytest(REPO / "suites" / "smoke", Path(tmp), "--dut=scratch:1G")
        tests = run.results()["run"]["outcome"]["passed"]
        asked, processes = asked_seconds(run.run_dir / "artifacts")
    per_test = (run.wall_s - asked) / tests
    print(
        f"smoke: {tests} tests, wall {run.wall_s:.2f} s, fio asked for {asked:.2f} s,"
        f" fio processes took {processes:.2f} s"
    )
    fio_startup = processes - asked
    print(
        f"  fio's own start-up and wind-down beyond the asked time: {fio_startup:.2f} s"
        f" ({fio_startup / tests:.2f} s per test)"
    )
    print(
        f"  outside fio (interpreter and pytest start-up, scratch set-up, figures, report):"
        f" {run.wall_s - processes:.2f} s ({(run.wall_s - processes) / tests:.2f} s per test)"
    )
    ok = per_test < TARGET_S
    print(verdict("overhead", f"{per_test:.2f} s per test", f"< {TARGET_S} s", ok))
    return 0 if ok or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
