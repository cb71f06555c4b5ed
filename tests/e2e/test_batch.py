"""fio jobs held at their gates in one fio process and released one at a time, on a loop device."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import FioError
from pytest_ssd.fio.batch import Batch
from pytest_ssd.fio.engine import run_jobs
from pytest_ssd.fio.job import FioJob, fio_seed

MiB = 1 << 20


def jobs(n: int, read_pct: int = 0) -> list[FioJob]:
    return [
        FioJob(f"j{i}", "rnd", 4096, iodepth=2, read_pct=read_pct, size=16 * MiB, io_bytes=MiB)
        for i in range(n)
    ]


def running_in(folder: Path) -> list[int]:
    """Processes whose working directory is *folder*: a batch's fio, its jobs, their shells.

    By folder, not by parent: a job process calls setsid, and an orphan is init's child.
    """
    found = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if cwd.readlink() == folder:
                found.append(int(cwd.parent.name))
        except OSError:
            continue
    return found


def test_released_jobs_get_fios_own_figures_and_a_skipped_job_does_no_io(
    loop_device: Any, tmp_path: Path
) -> None:
    dev, batch_jobs = loop_device(64), jobs(4)
    with Batch(batch_jobs, dev, artifacts=tmp_path / "b", logs=True) as batch:
        first = batch.release(batch_jobs[0])
        assert first.directions["write"].io_bytes == MiB and batch.running
        batch.skip(batch_jobs[1])
        batch.release(batch_jobs[2])
        assert batch.waiting == [batch_jobs[3]]
        run = batch.close()  # skips the job still waiting
    assert run.skipped == ("j1", "j3")
    assert {job.name: job.io_bytes for job in run.output.jobs} == {
        "j0": MiB,
        "j1": 0,
        "j2": MiB,
        "j3": 0,
    }
    assert run.differences() == [], "the logs' figures are fio's"
    assert run.released["j2"].directions["write"].total_ios == 256
    assert not running_in(tmp_path / "b")


def test_a_job_that_cannot_start_fails_its_release_quickly_and_leaves_no_fio(
    loop_device: Any, tmp_path: Path
) -> None:
    broken = [replace(job, extra=(("ioengine", "no-such-engine"),)) for job in jobs(2)]
    batch = Batch(broken, loop_device(64), artifacts=tmp_path / "b")
    batch.start()
    started = time.monotonic()
    with pytest.raises(FioError, match=r"fio job j0 on .* never reached its gate: fio ended: "):
        batch.run(batch.jobs[0])
    assert time.monotonic() - started < 10
    assert not batch.running and not running_in(tmp_path / "b")


def test_abort_leaves_no_fio_running(loop_device: Any, tmp_path: Path) -> None:
    dev = loop_device(64)
    batch = Batch(jobs(3), dev, artifacts=tmp_path / "b")
    batch.start()
    batch.run(batch.jobs[0])
    assert len(running_in(tmp_path / "b")) >= 3, "fio and the jobs waiting at their gates"
    batch.abort()
    assert not batch.running and not running_in(tmp_path / "b")


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
    alone = run_jobs([job], dev, artifacts=tmp_path / "alone")
    second = run_jobs([other, job], dev, artifacts=tmp_path / "second")
    # as the third job its fio seed is 2**63 or more: written as a negative number
    third = run_jobs([other, replace(other, name="o2"), job], dev, artifacts=tmp_path / "third")
    assert fio_seed(job.seed or 0, 3) < 0
    lbas = offsets(next(alone.artifacts.glob("log-seeded_clat.*.log")))
    assert len(lbas) == 64 and len(set(lbas)) > 32, "random offsets"
    assert offsets(next(second.artifacts.glob("log-seeded_clat.*.log"))) == lbas
    assert offsets(next(third.artifacts.glob("log-seeded_clat.*.log"))) == lbas
    with Batch(
        [other, replace(job, io_log=False)], dev, artifacts=tmp_path / "b", logs=True
    ) as batch:
        batch.skip(other)
        batch.release(batch.jobs[1])
        batch.close()
    assert offsets(next((tmp_path / "b").glob("io-2_clat.*.log"))) == lbas
    # without a seed the same job is fio's default stream, which moves with its place
    plain = [replace(j, seed=None) for j in (other, job)]
    moved = run_jobs(plain, dev, artifacts=tmp_path / "plain")
    lone = run_jobs(plain[1:], dev, artifacts=tmp_path / "plain-alone")
    assert offsets(next(moved.artifacts.glob("log-seeded_clat.*.log"))) != offsets(
        next(lone.artifacts.glob("log-seeded_clat.*.log"))
    )
