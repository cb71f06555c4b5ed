"""Which LBAs of a device hold data written since its last purge, as byte intervals.

An SSD answers a read of a never-written (or deallocated) LBA without touching
NAND: such a read measures nothing about the drive.  The map is kept per device
in the process that runs its tests: a purge empties it, a write that covers its
span adds it, a discard takes its span out.  Before a read, the fixture asks
:meth:`WrittenMap.missing` and writes what is missing first.

Only writes known to cover every block of their span count: a whole pass
(no runtime, and an amount of at least the span), sequential, or random with
fio's random map (its default: each block once per pass).  Time-based writes
cover an unknown part and add nothing; a device's contents before this session
are unknown, so the map starts empty (a scratch device is all holes anyway).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from pytest_ssd.fio.job import FioJob


@dataclass
class WrittenMap:
    """Disjoint, sorted ``[start, end)`` byte intervals known to hold written data."""

    intervals: list[tuple[int, int]] = field(default_factory=list)

    def clear(self) -> None:
        self.intervals.clear()

    def add(self, start: int, end: int) -> None:
        if end <= start:
            return
        merged = [(s, e) for s, e in self.intervals if e < start or s > end]
        joined = [(s, e) for s, e in self.intervals if not (e < start or s > end)]
        low = min([start, *(s for s, _ in joined)])
        high = max([end, *(e for _, e in joined)])
        bisect.insort(merged, (low, high))
        self.intervals = merged

    def remove(self, start: int, end: int) -> None:
        kept: list[tuple[int, int]] = []
        for s, e in self.intervals:
            if e <= start or s >= end:
                kept.append((s, e))
                continue
            if s < start:
                kept.append((s, start))
            if e > end:
                kept.append((end, e))
        self.intervals = kept

    def missing(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[start, end)`` not known to be written."""
        gaps, cursor = [], start
        for s, e in self.intervals:
            if e <= cursor:
                continue
            if s >= end:
                break
            if s > cursor:
                gaps.append((cursor, min(s, end)))
            cursor = max(cursor, e)
            if cursor >= end:
                break
        if cursor < end:
            gaps.append((cursor, end))
        return gaps

    def covers(self, start: int, end: int) -> bool:
        return not self.missing(start, end)

    def note(self, job: FioJob, capacity: int) -> None:
        """Account a job that ran to completion: add its span when it wrote all of it."""
        start, end = span(job, capacity)
        if covers_span(job, end - start):
            self.add(start, end)


#: the prefill's shape: large sequential writes, a queue deep enough for any drive
PREFILL_BLOCK = 128 << 10
PREFILL_QD = 32


def prefill_job(name: str, start: int, end: int) -> FioJob:
    """One sequential pass writing ``[start, end)``, in the largest block that tiles it."""
    size = end - start
    block = next(b for b in (PREFILL_BLOCK, 4096, 512) if size % b == 0 and start % b == 0)
    return FioJob(
        name, "seq", block, iodepth=PREFILL_QD, read_pct=0, offset=start, size=size, percentiles=()
    )


def span(job: FioJob, capacity: int) -> tuple[int, int]:
    """The byte range a job addresses (``size`` from ``offset``, else to the end)."""
    size = job.size if job.size is not None else capacity - job.offset
    return job.offset, job.offset + size


def covers_span(job: FioJob, size: int) -> bool:
    """Whether *job* writes every block of its span (see the module)."""
    if job.read_pct != 0 or job.runtime_s is not None:
        return False
    if job.io_bytes is not None and job.io_bytes < size:
        return False
    options = dict(job.extra)
    no_map = "norandommap" in options and options["norandommap"] != "0"
    skewed = options.get("random_distribution", "random") != "random"
    return job.pattern == "seq" or not (no_map or skewed)
