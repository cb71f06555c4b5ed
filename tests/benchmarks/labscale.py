"""A lab's test host at scale: N loop devices behind one sshd on 127.0.0.1, N = 1, 4, 8, 16.

A one-test suite (a 0.2 s read on each device) runs with ``-n N`` (one xdist
worker per drive, as a lab runs its drives) on N 64 MiB direct-I/O loop devices
reached as ``--dut=ssh://root@127.0.0.1:PORT/dev/loopX`` through a real sshd
(tests/sshd.py) with sshd's default ``MaxSessions 10``; then N = 1 and 16 in
one process (no ``-n``).  Printed for each:

* logins: the ``Accepted publickey`` lines of the sshd's log (one per SSH login),
  target one per host at N = 16; channels sshd refused (``no more sessions``);
* start-up: from pytest's start to the first test's start (the test notes the
  time it starts), target: 16 drives at most twice one drive's, judged on the medians of
  STARTUP_PAIRS runs of ``-n 1`` and ``-n 16`` taken in turn without the memory sampler (its
  walk of /proc costs about 20 ms of CPU a sample at N = 16, 5 % of 2 vCPUs, and less at
  N = 1: it would tilt the ratio it measures);
* CPU before the first test: the CPU seconds (user + system) of the process that runs it,
  the mean over the xdist workers (in one process, pytest's): 16 workers on 2 vCPUs take
  8 times one worker's CPU whatever the host does;
* memory: the largest sum, sampled every 0.2 s, of the PSS
  (``/proc/PID/smaps_rollup``) of pytest and every process under it (xdist
  workers, ssh, fio), target 45 MiB per drive;
* the load average when the run started (the machine is shared: its figures move with it).

As ``./run bench`` runs it: pytest-ssd's bytecode compiled first (as ``./run`` and a pip
install do; a module whose bytecode is stale is compiled again by every worker, 16 times
on 2 vCPUs), and each suite in a folder of its own that is its rootdir, as a lab's suites
sit in its repository: pytest lists every entry of each folder from the rootdir down to
the suite, and a suite under a crowded /tmp with the rootdir elsewhere costs each worker
a stat of every entry of /tmp (365 here: 40 ms of CPU a worker).

Run: ``python -m tests.benchmarks.labscale [--report-only]``.
"""

from __future__ import annotations

import compileall
import contextlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.lab import REPO, verdict
from tests.sshd import Sshd, local_sshd

SIZES = (1, 4, 8, 16)
DEVICE_MIB = 64
TIMEOUT_S = 900
SAMPLE_S = 0.2
MEMORY_TARGET_MIB = 45.0
#: unsampled -n 1 / -n 16 pairs the start-up verdict takes the medians of
STARTUP_PAIRS = 5
#: numbers the runs (each its own suite, starts file and reports)
_RUNS = itertools.count(1)

SUITE = """
import time
from pathlib import Path

from pytest_ssd.fio.job import FioJob


def test_a_short_read(ssd):
    with open({starts!r}, "a") as fh:
        fh.write(f"{{time.time()}} {{time.process_time()}}\\n")
    job = FioJob("read", "rnd", 4096, size=1 << 20, runtime_s=0.2)
    assert ssd.run(job).directions["read"].io_bytes > 0
"""


@dataclass(frozen=True)
class Figures:
    drives: int
    workers: bool
    logins: int
    refused: int
    load: float
    startup_s: float
    pss_mib: float
    wall_s: float
    cpu_s: float


@contextlib.contextmanager
def loops(folder: Path, count: int) -> Iterator[list[Path]]:
    attached: list[Path] = []
    try:
        for n in range(count):
            backing = folder / f"{n}.img"
            with backing.open("wb") as fh:
                fh.truncate(DEVICE_MIB << 20)
            argv = ["losetup", "--find", "--show", "--direct-io=on", str(backing)]
            found = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60)
            attached.append(Path(found.stdout.strip()))
        yield attached
    finally:
        for dev in attached:
            subprocess.run(["losetup", "-d", str(dev)], check=False, timeout=60)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):  # it may end meanwhile
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def pss_kib(root: int) -> int:
    """PSS of *root* and every process under it, KiB."""
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        todo += tree.get(pid, [])
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
    return total


def measure(
    work: Path, server: Sshd, devs: list[Path], workers: bool, sample: bool = True
) -> Figures:
    """One run; *sample*: the memory sampled every SAMPLE_S (else PSS is 0)."""
    name = f"{next(_RUNS)}-{len(devs)}{'n' if workers else ''}{'' if sample else 'u'}"
    suite = work / "suites" / f"suite-{name}"
    suite.mkdir(parents=True)
    starts = work / f"starts-{name}"
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_read.py").write_text(SUITE.format(starts=str(starts)))
    argv = [sys.executable, "-m", "pytest", str(suite), f"--rootdir={suite}", "-q"]
    argv += ["-p", "no:cacheprovider", f"--ssd-report-dir={work / f'reports-{name}'}"]
    argv += [f"--ssd-ssh-config={server.config}", "--ssd-profile=quick"]
    argv += [f"--dut={server.url(str(d))}" for d in devs] + [f"--ssd-confirm={d}" for d in devs]
    argv += [f"-n{len(devs)}"] if workers else ["-p", "no:xdist"]
    logins_before, refused_before = server.logins(), _refused(server)
    load = os.getloadavg()[0]
    out = work / f"out-{name}.txt"
    begun = time.time()
    with out.open("w") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO)
        peak = 0
        try:
            while proc.poll() is None:
                if sample:
                    peak = max(peak, pss_kib(proc.pid))
                time.sleep(SAMPLE_S)
                if time.time() - begun > TIMEOUT_S:
                    proc.kill()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    wall = time.time() - begun
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed (exit {proc.returncode}):\n{out.read_text()[-3000:]}")
    noted = [line.split() for line in starts.read_text().splitlines()]
    first = min(float(when) for when, _ in noted)
    used = [float(cpu) for _, cpu in noted]  # a test a worker; in one process, the first's
    cpu = sum(used) / len(used) if workers else min(used)
    logins, refused = server.logins() - logins_before, _refused(server) - refused_before
    return Figures(len(devs), workers, logins, refused, load, first - begun, peak / 1024, wall, cpu)


def _refused(server: Sshd) -> int:
    """Channels sshd refused so far (MaxSessions)."""
    return (server.folder / "sshd.log").read_text().count("no more sessions")


def bytecode() -> str:
    """Compile pytest-ssd's bytecode where it is missing or stale, as ``./run`` does; say
    whether Python writes bytecode and how many modules were compiled."""
    written = "not written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "written"
    package = REPO / "pytest_ssd"
    stale = sum(
        1
        for source in package.rglob("*.py")
        if not any(
            pyc.stat().st_mtime >= source.stat().st_mtime
            for pyc in (source.parent / "__pycache__").glob(f"{source.stem}.*.pyc")
        )
    )
    compileall.compile_dir(package, quiet=1)
    return f"bytecode {written}, pytest-ssd's compiled ({stale} modules compiled now)"


def main() -> int:
    print(bytecode(), flush=True)
    found: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="ssd-labscale-") as tmp:
        work = Path(tmp)
        with loops(work, max(SIZES)) as devs, local_sshd(work / "sshd", max_sessions=10) as srv:
            for n in SIZES:
                found.append(measure(work, srv, devs[:n], workers=True))
                print(_line(found[-1]), flush=True)
            for n in (1, max(SIZES)):
                found.append(measure(work, srv, devs[:n], workers=False))
                print(_line(found[-1]), flush=True)
            pairs = [
                (measure(work, srv, devs[:1], True, False), measure(work, srv, devs, True, False))
                for _ in range(STARTUP_PAIRS)
            ]
            for low, high in pairs:
                print(
                    f"unsampled: -n 1 {low.startup_s:.2f} s (load {low.load:.1f}),"
                    f" -n {high.drives} {high.startup_s:.2f} s (load {high.load:.1f}):"
                    f" {high.startup_s / low.startup_s:.2f}x",
                    flush=True,
                )
    one = statistics.median(low.startup_s for low, _ in pairs)
    many = statistics.median(high.startup_s for _, high in pairs)
    sixteen = next(f for f in found if f.drives == max(SIZES) and f.workers)
    one_alone, alone = found[-2:]
    ok = [
        verdict(
            "logins at N=16 (-n 16)",
            f"{sixteen.logins}",
            "1 per host",
            sixteen.logins == 1,
        ),
        verdict("logins at N=16 (one process)", f"{alone.logins}", "1 per host", alone.logins == 1),
        verdict(
            f"start-up at N=16 (-n 16, medians of {STARTUP_PAIRS} unsampled runs)",
            f"{many:.2f} s = {many / one:.2f}x N=1's {one:.2f} s",
            "<= 2x",
            many <= 2 * one,
        ),
        verdict(
            "start-up at N=16 (one process)",
            f"{alone.startup_s:.1f} s = {alone.startup_s / one_alone.startup_s:.2f}x"
            f" N=1's {one_alone.startup_s:.1f} s",
            "<= 2x",
            alone.startup_s <= 2 * one_alone.startup_s,
        ),
        verdict(
            "controller memory at N=16 (-n 16)",
            f"{sixteen.pss_mib / 16:.0f} MiB per drive",
            f"<= {MEMORY_TARGET_MIB:.0f} MiB per drive",
            sixteen.pss_mib / 16 <= MEMORY_TARGET_MIB,
        ),
    ]
    print("\n".join(ok))
    met = all(line.endswith("MET") for line in ok)
    return 0 if met or "--report-only" in sys.argv else 1


def _line(f: Figures) -> str:
    how = f"-n {f.drives}" if f.workers else "one process"
    return (
        f"N={f.drives:2d} ({how}): logins {f.logins}, refused {f.refused},"
        f" start-up {f.startup_s:.1f} s, CPU before the first test {f.cpu_s:.2f} s,"
        f" PSS {f.pss_mib:.0f} MiB ({f.pss_mib / f.drives:.0f} MiB per drive),"
        f" wall {f.wall_s:.0f} s, load {f.load:.1f}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
