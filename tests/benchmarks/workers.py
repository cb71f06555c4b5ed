"""Workers' memory: PSS of the controller and all it started, N drives under ``-n N``.

``pytest suites/smoke -k seq-write`` (quick profile) on N scratch devices (sparse files as
direct-I/O loop devices) with ``-n N``: one xdist worker per drive.  While it runs the
process tree under pytest is sampled every 0.2 s (``/proc/PID/smaps_rollup``: PSS, so the
pages the processes share are counted once); the figure is the largest sum seen, per drive,
next to the lab-scale target of issue 30: <= 45 MiB per drive.  A worker's own PSS (the
largest seen) is printed beside it, and the controller's and workers' share per drive
(the rest is fio: its job process holds QD32 x 128 KiB of buffers for this corner).
Run: ``python -m tests.benchmarks.workers [--report-only] [--drives=1,4,8,16]``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.benchmarks.lab import REPO, verdict

TARGET_MIB = 45.0
DRIVES = (1, 4, 8, 16)
TIMEOUT_S = 900
SAMPLE_S = 0.2


def pss_mib(pid: int) -> float:
    """A process's proportional set size in MiB; 0 once it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0.0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        for task in tasks:
            found += [int(c) for c in (task / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        pass
    return found


def tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo += children(current)
    return pids


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):
        return ""


@dataclass
class Peaks:
    """The largest figures seen while sampling."""

    total: float = 0.0
    python: float = 0.0
    controller: float = 0.0
    worker: float = 0.0
    workers: dict[int, float] = field(default_factory=dict)

    def sample(self, root: int) -> None:
        total = python = 0.0
        for pid in tree(root):
            pss = pss_mib(pid)
            total += pss
            if pid == root:
                self.controller = max(self.controller, pss)
                python += pss
            elif command(pid).startswith(sys.executable) and "-c" in command(pid).split():
                self.workers[pid] = max(self.workers.get(pid, 0.0), pss)
                python += pss
        self.total = max(self.total, total)
        self.python = max(self.python, python)
        self.worker = max(self.workers.values(), default=0.0)


def measure(drives: int, folder: Path) -> tuple[Peaks, int, str]:
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO / "suites" / "smoke"),
        *["--dut=scratch:1G"] * drives,
        "--ssd-profile=quick",
        "-k",
        "seq-write",
        f"-n{drives}",
        f"--ssd-report-dir={folder}",
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    peaks = Peaks()
    with subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        done = threading.Event()
        out: list[str] = []
        reader = threading.Thread(target=lambda: (out.append(proc.stdout.read()), done.set()))  # type: ignore[union-attr]
        reader.start()
        deadline = time.monotonic() + TIMEOUT_S
        while not done.wait(SAMPLE_S) and time.monotonic() < deadline:
            peaks.sample(proc.pid)
        if not done.is_set():
            proc.kill()
        reader.join()
        code = proc.wait()
    return peaks, code, "".join(out)


def main() -> int:
    counts = DRIVES
    for arg in sys.argv[1:]:
        if arg.startswith("--drives="):
            counts = tuple(int(n) for n in arg.split("=", 1)[1].split(","))
    ok = True
    for drives in counts:
        with tempfile.TemporaryDirectory(prefix="ssd-workers-") as tmp:
            peaks, code, output = measure(drives, Path(tmp))
        if code != 0:
            print(output.strip()[-3000:])
            print(f"workers: {drives} drives: pytest exited {code}")
            ok = False
            continue
        per_drive = peaks.total / drives
        met = per_drive <= TARGET_MIB
        ok &= met
        figure = (
            f"{drives:2d} drives: {peaks.total:6.1f} MiB in all, {per_drive:5.1f} MiB per drive "
            f"(Python alone {peaks.python / drives:5.1f}: controller {peaks.controller:5.1f}, "
            f"a worker {peaks.worker:5.1f} MiB PSS; the rest is fio)"
        )
        print(verdict("workers", figure, f"<= {TARGET_MIB:.0f} MiB per drive", met))
    return 0 if ok or "--report-only" in sys.argv else 1


if __name__ == "__main__":
    raise SystemExit(main())
