"""The written map: which bytes hold data written since the last purge."""

from __future__ import annotations

import pytest

from pytest_ssd.fio.job import FioJob
from pytest_ssd.state.written import WrittenMap, covers_span, prefill_job, span

MiB = 1 << 20


def test_intervals_merge_split_and_report_gaps() -> None:
    m = WrittenMap()
    m.add(0, 10)
    m.add(20, 30)
    m.add(10, 20)  # touching: one interval
    assert m.intervals == [(0, 30)]
    m.remove(5, 8)
    assert m.intervals == [(0, 5), (8, 30)]
    assert m.missing(0, 40) == [(5, 8), (30, 40)]
    assert m.missing(8, 30) == [] and m.covers(10, 20)
    m.add(100, 110)
    assert m.missing(0, 120) == [(5, 8), (30, 100), (110, 120)]
    m.clear()
    assert m.missing(0, 4) == [(0, 4)]


@pytest.mark.parametrize(
    ("job", "covered"),
    [
        (FioJob("w", "seq", 131072, read_pct=0, size=64 * MiB), True),
        (FioJob("w", "seq", 131072, read_pct=0, size=64 * MiB, io_bytes=128 * MiB), True),
        (FioJob("w", "rnd", 4096, read_pct=0, size=64 * MiB), True),  # fio's random map
        (FioJob("w", "seq", 131072, read_pct=0, size=64 * MiB, runtime_s=3), False),
        (FioJob("w", "seq", 131072, read_pct=0, size=64 * MiB, io_bytes=8 * MiB), False),
        (FioJob("w", "rnd", 4096, read_pct=0, size=64 * MiB, extra=(("norandommap", ""),)), False),
        (FioJob("w", "rnd", 4096, read_pct=0, extra=(("random_distribution", "zipf:1.2"),)), False),
        (FioJob("rw", "rnd", 4096, read_pct=70, size=64 * MiB), False),
        (FioJob("r", "seq", 131072, size=64 * MiB), False),
    ],
)
def test_only_writes_known_to_cover_their_span_count(job: FioJob, covered: bool) -> None:
    start, end = span(job, 1 << 30)
    assert covers_span(job, end - start) is covered
    m = WrittenMap()
    m.note(job, 1 << 30)
    assert m.covers(start, end) is covered


def test_a_prefill_tiles_its_span_exactly() -> None:
    job = prefill_job("p", 64 * MiB, 128 * MiB)
    assert (job.pattern, job.read_pct, job.offset, job.size, job.block_size) == (
        "seq",
        0,
        64 * MiB,
        64 * MiB,
        131072,
    )
    assert job.runtime_s is None and covers_span(job, 64 * MiB)
    odd = prefill_job("p", 4096, 4096 + 3 * 4096)
    assert odd.block_size == 4096 and odd.size == 3 * 4096
