"""Fidelity: RND 4 KiB QD32 read IOPS through pytest-ssd vs the same fio job run directly.

Both run on one direct-I/O loop device, alternately, ROUNDS times each; the
target is a median within 5 % of direct fio.  Run: ``python -m tests.benchmarks.fidelity``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.lab import loop_device, run_pytest, sh, verdict

ROUNDS = 3
RUNTIME_S = 5
RAMP_S = 1
SPAN_MIB = 256
TARGET = 0.05

SUITE = f"""
from pytest_ssd.fio.job import FioJob

def test_rnd_read(ssd):
    ssd.run(FioJob(name="rnd-read", pattern="rnd", block_size=4096, iodepth=32, read_pct=100,
                   size={SPAN_MIB} << 20, runtime_s={RUNTIME_S}, ramp_s={RAMP_S}))
"""


def direct_fio(dev: Path) -> float:
    out = sh(
        "fio",
        "--name=direct",
        f"--filename={dev}",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=32",
        "--ioengine=libaio",
        "--direct=1",
        "--offset=0",
        f"--size={SPAN_MIB}M",
        "--time_based",
        f"--runtime={RUNTIME_S}",
        f"--ramp_time={RAMP_S}",
        "--output-format=json",
    )
    data = json.loads(out[out.index("{") :])
    return float(data["jobs"][0]["read"]["iops"])


def plugin(dev: Path, suite: Path, reports: Path) -> float:
    run = run_pytest(suite, reports, f"--dut={dev}", f"--ssd-confirm={dev}", f"--rootdir={suite}")
    (measurement,) = run.results()["measurements"]
    return float(measurement["metrics"]["read"]["iops"])


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ssd-fidelity-") as tmp:
        work = Path(tmp)
        suite = work / "suite"
        suite.mkdir()
        (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
        (suite / "test_fidelity.py").write_text(SUITE)
        with loop_device(work, SPAN_MIB + 64) as dev:
            sh(
                "fio",
                "--name=fill",
                f"--filename={dev}",
                "--rw=write",
                "--bs=1M",
                "--direct=1",
                f"--size={SPAN_MIB}M",
            )
            pairs = []
            for index in range(ROUNDS):
                ours = plugin(dev, suite, work / "reports")
                theirs = direct_fio(dev)
                pairs.append((ours, theirs))
                print(f"round {index + 1}: pytest-ssd {ours:,.0f} IOPS, fio {theirs:,.0f} IOPS")
    ours = statistics.median(p[0] for p in pairs)
    theirs = statistics.median(p[1] for p in pairs)
    gap = abs(ours / theirs - 1)
    print(f"median: pytest-ssd {ours:,.0f} IOPS, direct fio {theirs:,.0f} IOPS")
    print(verdict("fidelity", f"{gap:.1%} apart", f"<= {TARGET:.0%}", gap <= TARGET))
    return 0 if gap <= TARGET or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
