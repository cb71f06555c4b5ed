"""fio jobs held at their gates, a fio process per point, released one at a time."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import FioError
from pytest_ssd.fio.agent import Gates
from pytest_ssd.fio.batch import AHEAD, Batch
from pytest_ssd.fio.engine import run_jobs
from pytest_ssd.fio.job import FioJob, fio_seed
from pytest_ssd.fio.results import parse_output
from tests.fake_machine import HERE

MiB = 1 << 20


def jobs(n: int, read_pct: int = 0) -> list[FioJob]:
    return [
        FioJob(f"j{i}", "rnd", 4096, iodepth=2, read_pct=read_pct, size=16 * MiB, io_bytes=MiB)
        for i in range(n)
    ]


def gates(dev: Any) -> Gates:
    """A batch's gates on *dev* here: this machine's batch agent's, as the plugin's runner
    gives them."""
    return HERE.batch_gates(str(dev), None)


def agent_folder(batch: Batch) -> Path:
    """Where the batch's fio processes run: its folder of the agent's (removed with it)."""
    return Path(batch.gates.folder)


def running_in(folder: Path) -> list[int]:
    """Processes whose working directory is *folder* (or was: removed since): a batch's fio,
    its jobs, their shells.

    By folder, not by parent: a job process calls setsid, and an orphan is init's child.
    """
    found = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if str(cwd.readlink()).removesuffix(" (deleted)") == str(folder):
                found.append(int(cwd.parent.name))
        except OSError:
            continue
    return found


@contextlib.contextmanager
def killed_after(script: str, dev: Any, folder: Path, said: str) -> Iterator[Path]:
    """Run *script* (a batch on *dev* in *folder*) in a child Python until it says *said* and
    its batch's folder of the agent's (given); kill it (as ``kill -9``: no clean-up of its
    own) when the block ends."""
    argv = [sys.executable, "-c", script, str(dev), str(folder)]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        word, _, there = child.stdout.readline().rstrip("\n").partition(" ")
        assert word == said and there
        yield Path(there)
    finally:
        child.kill()
        child.wait()


def left_after(folders: list[Path], seconds: float = 20) -> list[int]:
    """The processes still running in *folders* when none is left or *seconds* passed."""
    deadline = time.monotonic() + seconds
    left = [pid for folder in folders for pid in running_in(folder)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [pid for folder in folders for pid in running_in(folder)]
    return left


def removed(folder: Path, seconds: float = 20) -> bool:
    """*folder* is gone, or is within *seconds*."""
    deadline = time.monotonic() + seconds
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not folder.exists()


def test_released_jobs_get_fios_own_figures_and_a_skipped_job_does_no_io(
    loop_device: Any, tmp_path: Path
) -> None:
    count = AHEAD + 4
    dev, batch_jobs, folder = loop_device(64), jobs(count), tmp_path / "b"
    ahead, never, last = batch_jobs[1 : AHEAD + 1], batch_jobs[AHEAD + 1], batch_jobs[-1]
    with Batch(batch_jobs, dev, artifacts=folder, points=[1] * count, gates=gates(dev)) as batch:
        there = agent_folder(batch)
        (first,) = batch.measure(batch_jobs[:1])
        assert first.directions["write"].io_bytes == MiB and batch.running
        for job in ahead:  # their fio started ahead: told to end without I/O
            batch.skip(job)
        batch.skip(never)  # its fio had not started: it never does
        (measured,) = batch.measure(batch_jobs[-2:-1])
        assert batch.waiting == [last]
        assert not (there / never.name / "fio.stdout").exists()
        run = batch.close()  # skips the job still waiting
    assert run.skipped == tuple(job.name for job in (*ahead, never, last))
    assert {job.name: job.io_bytes for job in run.output.jobs} == {
        batch_jobs[0].name: MiB,
        **{job.name: 0 for job in ahead},
        batch_jobs[-2].name: MiB,
        last.name: 0,
    }
    assert not (folder / never.name / "fio.stdout").exists()
    assert measured == run.output.job(batch_jobs[-2].name)
    assert measured.directions["write"].total_ios == 256
    assert not left_after([there / job.name for job in batch_jobs], seconds=0)
    # the agent removes it once it reads the connection's end (after close: not at once)
    assert removed(there), "the agent removed the batch's folder"


def test_a_job_that_cannot_start_fails_its_release_quickly_and_leaves_no_fio(
    loop_device: Any, tmp_path: Path
) -> None:
    broken = [replace(job, extra=(("ioengine", "no-such-engine"),)) for job in jobs(2)]
    dev = loop_device(64)
    batch = Batch(broken, dev, artifacts=tmp_path / "b", gates=gates(dev))
    batch.start()
    started = time.monotonic()
    with pytest.raises(FioError, match=r"fio job j0 on .* never reached its gate: fio ended: "):
        batch.run(batch.jobs[0])
    assert time.monotonic() - started < 10
    assert not batch.running and not running_in(agent_folder(batch))


def test_abort_leaves_no_fio_running(loop_device: Any, tmp_path: Path) -> None:
    dev = loop_device(64)
    batch = Batch(jobs(3), dev, artifacts=tmp_path / "b", gates=gates(dev))
    batch.start()
    batch.run(batch.jobs[0])
    there = agent_folder(batch)
    assert len(running_in(there)) >= 3, "fio and the jobs waiting at their gates"
    batch.abort()
    assert not batch.running and not running_in(there)


def offsets(log: Path) -> list[int]:
    return [int(line.split(",")[4]) for line in log.read_text().splitlines()]


def test_a_seeded_job_hits_the_same_lbas_alone_after_another_job_and_in_a_batch(
    loop_device: Any, tmp_path: Path
) -> None:
    dev = loop_device(64)
    job = FioJob(
        "seeded",
        "rnd",
        4096,
        read_pct=0,
        size=16 * MiB,
        io_bytes=256 * 1024,
        seed=7,
        io_log=True,
        extra=(("log_offset", "1"),),
    )
    other = replace(job, name="other", seed=2, io_log=False)
    alone = run_jobs([job], dev, artifacts=tmp_path / "alone", runner=HERE)
    second = run_jobs([other, job], dev, artifacts=tmp_path / "second", runner=HERE)
    # as the third job its fio seed is 2**63 or more: written as a negative number
    third = run_jobs(
        [other, replace(other, name="o2"), job], dev, artifacts=tmp_path / "third", runner=HERE
    )
    assert fio_seed(job.seed or 0, 3) < 0
    lbas = offsets(next(alone.artifacts.glob("log-seeded_clat.*.log")))
    assert len(lbas) == 64 and len(set(lbas)) > 32, "random offsets"
    assert offsets(next(second.artifacts.glob("log-seeded_clat.*.log"))) == lbas
    assert offsets(next(third.artifacts.glob("log-seeded_clat.*.log"))) == lbas
    # the second job of a batch's fio process, logging its I/Os itself
    logged = replace(job, io_log=False, extra=(*job.extra, ("write_lat_log", "in-batch")))
    with Batch([other, logged], dev, artifacts=tmp_path / "b", gates=gates(dev)) as batch:
        batch.skip(other)
        batch.run(logged)
        batch.close()
    assert offsets(next((tmp_path / "b").glob("in-batch_clat.*.log"))) == lbas
    # without a seed the same job is fio's default stream, which moves with its place
    plain = [replace(j, seed=None) for j in (other, job)]
    moved = run_jobs(plain, dev, artifacts=tmp_path / "plain", runner=HERE)
    lone = run_jobs(plain[1:], dev, artifacts=tmp_path / "plain-alone", runner=HERE)
    assert offsets(next(moved.artifacts.glob("log-seeded_clat.*.log"))) != offsets(
        next(lone.artifacts.glob("log-seeded_clat.*.log"))
    )


def test_a_fio_process_per_point_hands_each_point_its_own_json(
    loop_device: Any, tmp_path: Path
) -> None:
    dev, batch_jobs, folder = loop_device(64), jobs(5, read_pct=50), tmp_path / "b"
    with Batch(batch_jobs, dev, artifacts=folder, points=[2, 2, 1], gates=gates(dev)) as batch:
        there = agent_folder(batch)
        assert [batch.folder(job).name for job in batch_jobs] == ["j0", "j0", "j2", "j2", "j4"]
        first = batch.measure(batch_jobs[:2])
        with pytest.raises(FioError, match="fio jobs j2 are not one process of this batch"):
            batch.measure(batch_jobs[2:3])
        batch.skip(batch_jobs[2])
        last = batch.measure(batch_jobs[4:])
        run = batch.close()  # skips j3, still waiting
    # the point's figures are its own fio process's JSON, read when that process ended
    own = parse_output((folder / "j0" / "fio.stdout").read_text())
    assert first == (own.job("j0"), own.job("j1"))
    assert sum(d.io_bytes for d in first[1].directions.values()) == MiB
    assert last[0] == run.output.job("j4")
    assert run.skipped == ("j2", "j3")
    assert {job.name: job.io_bytes for job in run.output.jobs} == {
        "j0": MiB,
        "j1": MiB,
        "j2": 0,
        "j3": 0,
        "j4": MiB,
    }
    assert not any(running_in(there / name) for name in ("j0", "j2", "j4"))


def test_the_callers_work_runs_once_a_point_after_its_io(loop_device: Any, tmp_path: Path) -> None:
    batch_jobs, done = jobs(3), []

    def meanwhile() -> None:  # the plugin exports results.json here
        done.append([job.name for job in batch.waiting])

    dev = loop_device(64)
    batch = Batch(batch_jobs, dev, artifacts=tmp_path / "b", points=[2, 1], gates=gates(dev))
    batch.while_exiting = meanwhile
    with batch:
        first = batch.measure(batch_jobs[:2])
        assert done == [["j2"]], "after both jobs of the point ran"
        batch.measure(batch_jobs[2:])
        batch.close()
    assert done == [["j2"], []]
    assert [job.io_bytes for job in first] == [MiB, MiB]


def test_fio_processes_start_ahead_as_points_end_and_a_broken_one_fails_its_own_point(
    loop_device: Any, tmp_path: Path
) -> None:
    broken = replace(jobs(AHEAD + 2)[-1], extra=(("ioengine", "no-such-engine"),))
    batch_jobs, folder, dev = [*jobs(AHEAD + 1), broken], tmp_path / "b", loop_device(64)
    points = [2] + [1] * AHEAD
    batch = Batch(batch_jobs, dev, artifacts=folder, points=points, gates=gates(dev))
    names = [batch.folder(job).name for job in batch_jobs[1:]]
    batch.start()
    there = agent_folder(batch)
    deadline = time.monotonic() + 10  # the agent's fork opens a fio's output files
    while not all(running_in(there / name) for name in names[:AHEAD]):
        assert time.monotonic() < deadline, "the first points' fio processes"
        time.sleep(0.02)
    started = [(there / name / "fio.stderr").exists() for name in names]
    assert started == [True] * AHEAD + [False], "the first points' fio processes only"
    first = batch.measure(batch_jobs[:2])
    assert [job.io_bytes for job in first] == [MiB, MiB]
    assert (there / broken.name / "fio.stderr").exists(), "started as the point's I/O ended"
    # the points before it run although the fio of the last could not start
    for job in batch_jobs[2:-1]:
        assert batch.measure([job])[0].io_bytes == MiB
    with pytest.raises(FioError, match=rf"fio job {broken.name} on .* never reached its gate"):
        batch.measure([broken])
    assert not batch.running
    assert not any(running_in(there / name) for name in names)


def policies(folder: Path) -> set[int]:
    found = set()
    for pid in running_in(folder):
        with contextlib.suppress(OSError):
            found.add(os.sched_getscheduler(pid))
    return found


def test_fio_processes_wait_for_their_turn_under_sched_idle_and_run_at_normal_policy(
    loop_device: Any, tmp_path: Path
) -> None:
    first, _, last = jobs(3)
    long = replace(first, name="long", io_bytes=64 * MiB)
    dev = loop_device(128)
    own = gates(dev)
    with Batch([first, long, last], dev, tmp_path / "b", points=[1] * 3, gates=own) as batch:
        folder = agent_folder(batch)
        deadline = time.monotonic() + 10
        while len(running_in(folder / "long")) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)  # fio, its job and the job's gate shell
        assert policies(folder / "long") == {os.SCHED_IDLE}
        batch.measure([first])
        measuring = threading.Thread(target=batch.measure, args=([long],))
        measuring.start()
        seen = set()
        while measuring.is_alive():
            seen.add((frozenset(policies(folder / "long")), frozenset(policies(folder / "j2"))))
            time.sleep(0.01)
        measuring.join()
        # while it moved data: the released fio at the normal policy, the next one idle
        assert (frozenset({os.SCHED_OTHER}), frozenset({os.SCHED_IDLE})) in seen
        (done,) = batch.measure([last])
        assert done.io_bytes == MiB


def test_a_fio_that_ended_by_itself_leaves_the_batchs_other_points_running(
    loop_device: Any, tmp_path: Path
) -> None:
    dev, batch_jobs, folder = loop_device(64), jobs(4), tmp_path / "b"
    with Batch(batch_jobs, dev, artifacts=folder, points=[2, 1, 1], gates=gates(dev)) as batch:
        folder = agent_folder(batch)
        batch.run(batch_jobs[0])
        batch.run(batch_jobs[1])
        deadline = time.monotonic() + 10
        while running_in(folder / "j0") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running_in(folder / "j0"), "fio ends once all its jobs ran"
        assert batch.running, "the points still waiting in their own fio"
        (own,) = batch.measure(batch_jobs[2:3])
        batch.measure(batch_jobs[3:])
        run = batch.close()  # reads the output of the fio that ended by itself
    assert [run.output.job(f"j{n}").io_bytes for n in range(4)] == [MiB] * 4
    assert own == run.output.job("j2") and run.skipped == ()


KILLED = """
import sys
from dataclasses import replace
from pathlib import Path
from pytest_ssd.fio.batch import Batch
from pytest_ssd.fio.job import FioJob
from tests.fake_machine import HERE
jobs = [
    FioJob(f"j{i}", "rnd", 4096, iodepth=1, read_pct=0, size=16 << 20, io_bytes=1 << 20)
    for i in range(6)
]
jobs[1] = replace(jobs[1], io_bytes=None, runtime_s=60)
gates = HERE.batch_gates(sys.argv[1], None)
batch = Batch(jobs, sys.argv[1], artifacts=Path(sys.argv[2]), points=[1] * 6, gates=gates)
batch.start()
batch.measure(jobs[:1])
print("measuring", gates.folder, flush=True)
batch.measure(jobs[1:2])
"""


def test_a_killed_pytest_leaves_no_fio_of_its_batch_waiting_or_running(
    loop_device: Any, tmp_path: Path
) -> None:
    with killed_after(KILLED, loop_device(64), tmp_path / "b", "measuring") as there:
        time.sleep(1.5)  # the point measures; the fio processes started ahead wait at their gates
        started = [name for name in ("j2", "j3") if running_in(there / name)]
        assert started == ["j2", "j3"], "waiting for their turn"
        assert running_in(there / "j1"), "the point measuring"
    left = left_after([there / f"j{n}" for n in range(6)])
    assert not left, "the agent ends the batch's fio and its jobs with its connection"
    assert removed(there), "and removes the batch's folder"


STARTED_EARLY = """
import sys, time
from pathlib import Path
from pytest_ssd.fio.batch import Batch
from pytest_ssd.fio.job import FioJob
from tests.fake_machine import HERE
jobs = [
    FioJob(f"j{i}", "rnd", 4096, iodepth=1, read_pct=0, size=16 << 20, io_bytes=1 << 20)
    for i in range(6)
]
gates = HERE.batch_gates(sys.argv[1], None)
batch = Batch(jobs, sys.argv[1], artifacts=Path(sys.argv[2]), points=[1] * 6, gates=gates)
batch.start()
batch.hold_meanwhile()  # as the plugin does during a state transition's last steps
print("transition", gates.folder, flush=True)
time.sleep(60)
"""


def test_a_pytest_killed_before_a_batch_started_early_runs_leaves_no_fio(
    loop_device: Any, tmp_path: Path
) -> None:
    names = [f"j{n}" for n in range(6)]
    # killed as kill -9, in the middle of the "transition"
    with killed_after(STARTED_EARLY, loop_device(64), tmp_path / "b", "transition") as there:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # each started fio's job and its gate's shell
            if all(len(running_in(there / name)) >= 3 for name in names[:AHEAD]):
                break
            time.sleep(0.1)
        time.sleep(0.5)  # the gates held by then
        assert [name for name in names if running_in(there / name)] == names[:AHEAD]
    left = left_after([there / name for name in names])
    assert not left, "the agent ends the batch's fio and the jobs at their gates"
    assert removed(there), "and removes the batch's folder"
