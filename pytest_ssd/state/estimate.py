"""What a run will take, said by the plan before it runs, without a made-up number.

A time-based fio job runs its ramp and its runtime: that is its time, on any drive.  A
job that runs by amount (``io_bytes``, or one pass over its region), a fill or a
preconditioning write, a discard and a purge take what the drive makes of them; until
that drive was measured (:mod:`pytest_ssd.state.speeds`) nobody knows it, so the plan
says the bytes ("plus 8.0 MiB read at the drive's speed"), not a time.  A test timed in
an earlier run is the better source (:mod:`pytest_ssd.state.testtimes`): the plan uses
a test's jobs only for tests not timed yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pytest_ssd.device.identity import binary_size
from pytest_ssd.fio.job import FioJob


def duration(seconds: float) -> str:
    """'42 s', '3.5 min', '2.4 h'."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 120 else f"{seconds:.0f} s"


@dataclass(frozen=True)
class Estimate:
    """Seconds known beforehand, and the work whose time is the drive's (not measured yet)."""

    seconds: float = 0.0
    written: int = 0
    read: int = 0
    discarded: int = 0
    purges: int = 0

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(
            self.seconds + other.seconds,
            self.written + other.written,
            self.read + other.read,
            self.discarded + other.discarded,
            self.purges + other.purges,
        )

    def times(self, n: int) -> Estimate:
        """*n* runs of this (``--ssd-repeat``)."""
        return Estimate(
            self.seconds * n, self.written * n, self.read * n, self.discarded * n, self.purges * n
        )

    def unknown(self) -> str:
        """The work of unknown time: '8.0 GiB written at the drive's speed and 1 purge(s) not
        timed yet' ('' when there is none)."""
        amounts = [
            f"{binary_size(n)} {what}"
            for n, what in (
                (self.written, "written"),
                (self.read, "read"),
                (self.discarded, "discarded"),
            )
            if n
        ]
        parts = [f"{', '.join(amounts)} at the drive's speed"] if amounts else []
        parts += [f"{self.purges} purge(s) not timed on it yet"] if self.purges else []
        return " and ".join(parts)

    def describe(self) -> str:
        """'about 42 s', 'about 42 s plus 8.0 GiB written at the drive's speed'."""
        unknown = self.unknown()
        if not unknown:
            return f"about {duration(self.seconds)}"
        return f"about {duration(self.seconds)} plus {unknown}" if self.seconds else unknown


def of_job(job: FioJob, target_size: int) -> Estimate:
    """*job* on a target of *target_size* bytes: its ramp and runtime, or its bytes."""
    if job.runtime_s is not None:
        return Estimate(job.planned_seconds)
    region = job.size if job.size is not None else max(target_size - job.offset, 0)
    amount = (job.io_bytes if job.io_bytes is not None else region) * job.numjobs  # per clone
    read = amount * job.read_pct // 100
    return Estimate(job.ramp_s, written=amount - read, read=read)


def of_jobs(jobs: Iterable[FioJob], target_size: int, repeat: int = 1) -> Estimate:
    """Jobs run one after another (as ``ssd.run_jobs`` does), the whole *repeat* times."""
    total = sum((of_job(job, target_size) for job in jobs), Estimate())
    return total.times(repeat)
