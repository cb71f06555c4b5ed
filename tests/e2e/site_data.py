"""The lab's database the site test reads: 3 drives × 6 builds, every run a real pytest-ssd
session on loop devices, the fifth build's reads throttled through a blkio cgroup.

Each build is measured in :data:`REPEAT` rounds, a session each (every point once on every
drive), the builds taken in turn: every build's first round, then every build's second, and
so on; a build's repeats are its rounds' measurements (as for a build run several times), and
the builds keep their order (a series orders them by their first run). Why rounds and not
``--ssd-repeat`` in one session: repeats taken one after another share whatever disturbs
those seconds of the machine. On a busy machine two or three consecutive repeats of a drive
that was not throttled fell from tens of thousands of IOPS to a few hundred or thousand (as
low as the throttle), a real step in the numbers that the detector rightly raises, or that
hides the throttled one; in turns, a disturbance reaches one repeat of a build, or one of
every build alike, and no step between two builds. At the fifth build the throttled drive
is measured alone, in a session of its own inside the cgroup, and the two others in a plain
session: only the throttled drive's runs are in the cgroup.

The suite has two half-second points (4 KiB random read and write, QD32; the smoke suite's
corners run 4 s each, eight times as long). The drives are loop
devices of three sizes: a loop device has no model, and the capacity is what makes each
drive's series its own (docs/history.md, "What a series is").

The throttle: a child cgroup made for that one session (cgroup v2's ``io.max`` where the
``io`` controller is enabled, else cgroup v1's ``blkio.throttle.read_bps_device``), on the
throttled drive's MAJ:MIN, reads only; the session's process is put in it before it execs
pytest, so its whole tree (fio included) and nothing else is throttled. The cgroup is
removed when the session ends, also when it fails or times out.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from tests.e2e.conftest import kill_everything_of, smoke_argv

#: the builds, in the order measured; the fifth (index 4) has its reads throttled
BUILDS = ("fw-1", "fw-2", "fw-3", "fw-4", "fw-5", "fw-6")
THROTTLED_BUILD = BUILDS[4]
#: the drives' loop devices, MiB: three capacities, three drives' series
SIZES_MIB = (64, 96, 128)
#: the drive whose reads the fifth build throttles
THROTTLED_DRIVE = 1
#: the read throttle, bytes/s: 4 KiB reads at QD32 on a loop device run at tens of
#: thousands of IOPS; 4 MiB/s caps them at about 1,000, a step no noise reaches
READ_BPS = 4 * 2**20
READ_POINT, WRITE_POINT = "rnd-read", "rnd-write"
SUITE = f"""
import pytest
from pytest_ssd.fio.job import FioJob


@pytest.mark.parametrize("rw", ["{READ_POINT}", "{WRITE_POINT}"])
def test_point(ssd, rw):
    read = rw == "{READ_POINT}"
    job = FioJob(rw, "rnd", 4096, iodepth=32, read_pct=100 if read else 0, runtime_s=0.5)
    assert ssd.run(job).directions["read" if read else "write"].io_bytes > 0
"""
#: repeats a side: 4 are the fewest the exact interval bounds (docs/baseline.md); each
#: from a session (a round) of its own
REPEAT = 4
RUN_TIMEOUT_S = 300.0
V2_ROOT = Path("/sys/fs/cgroup/unified")
V1_BLKIO = Path("/sys/fs/cgroup/blkio")
PRESSURE = Path("/proc/pressure/cpu")


@dataclass(frozen=True)
class Lab:
    """The database and what made it: the drives (loop devices) and the reports folder."""

    reports: Path
    drives: tuple[Path, ...]
    seconds: float
    #: each build's share of its sessions' time in which some task of the machine waited for
    #: a CPU (the kernel's pressure stall information): a busy machine moves every series
    busy: dict[str, float] = field(default_factory=dict)

    def busy_line(self) -> str:
        """Each build's CPU pressure, for a message: "fw-1 3%, fw-2 61%, ..."."""
        if not self.busy:
            return "no CPU pressure information (/proc/pressure/cpu)"
        shares = ", ".join(f"{build} {share:.0%}" for build, share in self.busy.items())
        return f"CPU pressure during each build's sessions: {shares}"

    @property
    def db(self) -> Path:
        return self.reports / "results.sqlite"

    def label(self, index: int) -> str:
        return f"drive-{index}"


def dev_number(dev: Path) -> str:
    """The device's ``MAJ:MIN``."""
    rdev = dev.stat().st_rdev
    return f"{os.major(rdev)}:{os.minor(rdev)}"


@dataclass(frozen=True)
class Throttle:
    """A child cgroup that limits reads of one device: where its processes are listed."""

    folder: Path

    @property
    def procs(self) -> Path:
        return self.folder / "cgroup.procs"

    def members(self) -> list[int]:
        with contextlib.suppress(OSError):
            return [int(pid) for pid in self.procs.read_text().split()]
        return []


def _v2_io() -> bool:
    with contextlib.suppress(OSError):
        return "io" in (V2_ROOT / "cgroup.subtree_control").read_text().split()
    return False


@contextlib.contextmanager
def read_throttle(dev: Path, bps: int, name: str) -> Iterator[Throttle]:
    """A new cgroup *name* whose reads of *dev* are limited to *bps* bytes/s; removed on exit
    (what is still in it killed first: only what the caller put there)."""
    if _v2_io():
        folder, limit = V2_ROOT / name, ("io.max", f"{dev_number(dev)} rbps={bps}")
    elif V1_BLKIO.is_dir():
        folder, limit = (
            V1_BLKIO / name,
            ("blkio.throttle.read_bps_device", f"{dev_number(dev)} {bps}"),
        )
    else:
        raise RuntimeError("no blkio cgroup here: neither cgroup v2's io nor v1's blkio")
    folder.mkdir()
    throttle = Throttle(folder)
    try:
        (folder / limit[0]).write_text(limit[1] + "\n")
        yield throttle
    finally:
        _empty(throttle)
        folder.rmdir()


def _empty(throttle: Throttle, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (left := throttle.members()) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        time.sleep(0.1)


#: the session's first step: join the cgroup named in argv[1], then exec the rest
_JOIN = (
    "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid()));"
    " os.execv(sys.argv[2], sys.argv[2:])"
)


def short_suite(folder: Path) -> Path:
    """The suite every session runs (:data:`SUITE`), written in *folder*."""
    suite = folder / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_site_points.py").write_text(SUITE)
    return suite


def session_argv(suite: Path, reports: Path, drives: Mapping[str, Path], build: str) -> list[str]:
    """One build's session on *drives* (by label; confirmed by path: a loop device has no
    serial)."""
    devices = [f"--dut={dev}" for dev in drives.values()]
    confirms = [f"--ssd-confirm={dev}" for dev in drives.values()]
    labels = [f"--dut-label={label}" for label in drives]
    options = (f"--ssd-build={build}", "--ssd-profile=quick")
    return smoke_argv(reports, *devices, *confirms, *labels, *options, suite=suite)


def run_session(argv: list[str], folder: Path, throttle: Throttle | None = None) -> None:
    """Run one session to its end (asserting it passed); in *throttle* when given."""
    if throttle is not None:
        argv = [sys.executable, "-c", _JOIN, str(throttle.procs), *argv]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=folder, check=False
        )
    finally:
        kill_everything_of(folder)
    assert done.returncode == 0, f"{argv}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"


def cpu_stall_us() -> int | None:
    """The kernel's total time, µs, in which some task waited for a CPU; None without PSI."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        some = PRESSURE.read_text().splitlines()[0]
        return int(some.rsplit("total=", 1)[1])
    return None


def measure_round(folder: Path, suite: Path, labelled: Mapping[str, Path], build: str) -> None:
    """One round of *build*: a session on every drive, but at the fifth build the throttled
    drive (:data:`THROTTLED_DRIVE`) in a session of its own, in the cgroup."""
    reports = folder / "reports"
    throttled = f"drive-{THROTTLED_DRIVE}"
    if build != THROTTLED_BUILD:
        run_session(session_argv(suite, reports, labelled, build), folder)
        return
    others = {label: dev for label, dev in labelled.items() if label != throttled}
    run_session(session_argv(suite, reports, others, build), folder)
    name = f"ssd-site-test-{os.getpid()}-{time.monotonic_ns()}"
    with read_throttle(labelled[throttled], READ_BPS, name) as throttle:
        alone = {throttled: labelled[throttled]}
        run_session(session_argv(suite, reports, alone, build), folder, throttle)


def build_lab(folder: Path, loop: Callable[[int], Path]) -> Lab:
    """The database: :data:`REPEAT` rounds (:func:`measure_round`) of each build, the builds
    taken in turn (all builds' first rounds, then all builds' second, ...)."""
    start = time.monotonic()
    drives = tuple(loop(size) for size in SIZES_MIB)
    suite = short_suite(folder)
    lab = Lab(folder / "reports", drives, 0.0)
    labelled = {lab.label(i): dev for i, dev in enumerate(drives)}
    stalls, seconds = dict.fromkeys(BUILDS, 0.0), dict.fromkeys(BUILDS, 0.0)
    for _ in range(REPEAT):
        for build in BUILDS:
            began, stalled = time.monotonic(), cpu_stall_us()
            measure_round(folder, suite, labelled, build)
            seconds[build] += time.monotonic() - began
            if stalled is not None and (now := cpu_stall_us()) is not None:
                stalls[build] += (now - stalled) / 1e6
    busy = {build: stalls[build] / seconds[build] for build in BUILDS} if PRESSURE.exists() else {}
    return replace(lab, seconds=time.monotonic() - start, busy=busy)
