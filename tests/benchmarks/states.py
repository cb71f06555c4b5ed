"""Device-state targets: cSSD write budget, and purges per state in a suite.

1. Write budget: bytes the kernel counted written while reaching ``cssd`` on a
   2 GiB direct-I/O loop device, against the method's own figure (2 x capacity
   + the RND region); target <= 1.05 x.
2. A suite of 10 tests needing 2 states (written in the wrong order) performs
   exactly 2 purges and 2 preconditionings.
Run: ``python -m tests.benchmarks.states``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.benchmarks.lab import loop_device, run_pytest, verdict

GiB, MiB = 1 << 30, 1 << 20
BUDGET = 1.05
SUITE = """
import pytest
from pytest_ssd.fio.job import FioJob


def read(ssd, region, name):
    r = ssd.region(region)
    job = FioJob(name, "rnd", 4096, iodepth=4, offset=r.offset, size=r.size, runtime_s=0.2)
    ssd.run(job)


@pytest.mark.dut_state("wipc")
@pytest.mark.parametrize("n", range(N_WIPC))
def test_wipc(ssd, n):
    read(ssd, "device", f"wipc-{n}")


@pytest.mark.dut_state("cssd")
@pytest.mark.parametrize("n", range(5))
def test_cssd(ssd, n):
    read(ssd, "rnd", f"cssd-{n}")
"""


def _suite(work: Path, n_wipc: int) -> Path:
    suite = work / f"suite-{n_wipc}"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_states.py").write_text(SUITE.replace("N_WIPC", str(n_wipc)))
    return suite


def main() -> int:
    ok = True
    with tempfile.TemporaryDirectory(prefix="ssd-states-") as tmp:
        work = Path(tmp)
        with loop_device(work, 2048) as dev:
            args = (f"--dut={dev}", f"--ssd-confirm={dev}", "--ssd-profile=quick")
            run = run_pytest(_suite(work, 0), work / "reports", *args, f"--rootdir={work}")
            (cssd,) = run.results()["transitions"]
            written = cssd["totals"]["written"]
            method = 2 * 2 * GiB + 256 * MiB
            ratio = written / method
            print(
                f"cssd on 2 GiB: kernel counted {written / MiB:,.0f} MiB written, the method"
                f" asks {method / MiB:,.0f} MiB (2 x capacity + 256 MiB RND region)"
            )
            print(verdict("write budget", f"{ratio:.3f} x", f"<= {BUDGET} x", ratio <= BUDGET))
            ok &= ratio <= BUDGET
            run = run_pytest(_suite(work, 5), work / "reports", *args, f"--rootdir={work}")
            transitions = run.results()["transitions"]
        purges = sum(1 for t in transitions for s in t["steps"] if s["kind"] == "purge")
        preconditions = sum(
            1 for t in transitions if any(s["kind"] in ("fio", "discard") for s in t["steps"])
        )
        figure = f"{purges} purges, {preconditions} preconditionings for 10 tests in 2 states"
        print(verdict("states", figure, "2 and 2", (purges, preconditions) == (2, 2)))
        ok &= (purges, preconditions) == (2, 2)
    return 0 if ok or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
