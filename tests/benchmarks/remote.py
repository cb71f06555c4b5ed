"""A test host against this machine: the smoke suite through SSH and fio's server, and here.

One 2 GiB direct-I/O loop device, reached two ways in alternation (here,
there, three times): ``--dut=/dev/loopN`` and
``--dut=ssh://root@127.0.0.1:PORT/dev/loopN`` through a real sshd on 127.0.0.1
(tests/sshd.py), quick profile.  Printed:

* fidelity: each corner's throughput there / here (median of the pairs),
  against the spread of the local runs around their median (the machine's noise;
  at least ±2 %);
* overhead: each test's call time there minus here (connection set-up, the
  guard's snapshot, ``fio --client`` start-up), per test.

Run: ``python -m tests.benchmarks.remote [--report-only]``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.benchmarks.lab import REPO, loop_device, run_pytest, verdict
from tests.sshd import local_sshd

SIZE_MIB = 2048
#: two local runs that agree closer than this still leave this much room
NOISE_FLOOR = 0.02
ROUNDS = 3


def _throughput(run_dir: Path) -> dict[str, float]:
    """MiB/s of each corner, read and write together."""
    data = json.loads((run_dir / "results.json").read_text())
    return {
        m["name"]: sum(d["bw_mib_s"] for d in m["metrics"].values() if isinstance(d, dict))
        for m in data["measurements"]
    }


def _calls(junit: Path) -> dict[str, float]:
    cases = ET.parse(junit).getroot().iter("testcase")
    return {case.get("name", ""): float(case.get("time", "0")) for case in cases}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ssd-remote-") as tmp:
        work = Path(tmp)
        with loop_device(work, SIZE_MIB) as dev, local_sshd(work / "sshd") as server:
            here = (f"--dut={dev}",)
            there = (f"--dut={server.url(str(dev))}", f"--ssd-ssh-config={server.config}")
            runs: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {
                "here": [],
                "there": [],
            }
            for n in range(ROUNDS):
                for where, args in (("here", here), ("there", there)):
                    junit = work / f"{where}-{n}.xml"
                    run = run_pytest(
                        REPO / "suites" / "smoke",
                        work / f"reports-{where}-{n}",
                        *args,
                        f"--ssd-confirm={dev}",
                        "--ssd-profile=quick",
                        f"--junitxml={junit}",
                        "-o",
                        "junit_duration_report=call",
                    )
                    runs[where].append((_throughput(run.run_dir), _calls(junit)))
    pairs = list(zip(runs["here"], runs["there"], strict=True))
    corners = sorted(runs["here"][0][0])
    ratios = {c: statistics.median(t[0][c] / h[0][c] for h, t in pairs) for c in corners}
    # the machine's noise: how far the local runs of a corner spread around their median
    noise = max(
        abs(run[0][c] / statistics.median(r[0][c] for r in runs["here"]) - 1)
        for run in runs["here"]
        for c in corners
    )
    room = max(noise, NOISE_FLOOR)
    tests = sorted(runs["here"][0][1])
    extra = [statistics.median(t[1][name] - h[1][name] for h, t in pairs) for name in tests]
    for c in corners:
        print(f"  {c}: there / here = {ratios[c]:.3f}")
    ok_fidelity = all(abs(r - 1) <= room for r in ratios.values())
    print(
        verdict(
            "remote fidelity",
            f"there / here {min(ratios.values()):.3f}..{max(ratios.values()):.3f}",
            f"within the local runs' spread (±{room:.1%})",
            ok_fidelity,
        )
    )
    per_test = statistics.mean(extra)
    print(
        f"remote overhead: {per_test:.2f} s per test beyond the same test here"
        f" ({', '.join(f'{e:.2f}' for e in extra)} s)"
    )
    return 0 if ok_fidelity or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
