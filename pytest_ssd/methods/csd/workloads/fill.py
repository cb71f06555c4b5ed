"""Fill drive (METHOD §4.2) and speed profile (METHOD §8): the jobs and their sizes per profile.

Fill drive (seed 000 "Fill Drive"): from a purged device, SEQ 128 KiB QD256 write
of 100 % of the span logged every 100 ms, an idle gap, a second 100 % pass.  The
span is the profile's (``ssd.region("device")``): the whole device in ``full``,
the first 16 GiB at most in ``quick``.  The idle gap is the profile's
``idle.fill_gap_s`` (5 min, ``--ssd-idle fill-gap=S``) scaled by ``Profile.seconds``.

Speed profile (seed 002): speed per quantum from the fill logs and from a
full-span SEQ read of the filled device, checked against ``dd``, an independent
reader.  The read is shaped like dd's (1 MiB blocks, one ``pread`` at a time,
direct I/O) so the two measure the same thing and only the tools differ.  Every
pass logs each I/O (``FioJob.io_log``): the bytes on the "written" axis are the
bytes completed.  The cross-check reads chunks spread over the span, dd and fio
alternately (:func:`check_chunks`), so a busy host slows both alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.analysis.fill import CacheRule
from pytest_ssd.analysis.speed import parse_dd
from pytest_ssd.fio.job import FioJob
from pytest_ssd.machine.machine import Machine
from pytest_ssd.state.profile import Profile

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
#: the read's I/O engine: synchronous reads, one at a time, as dd's read()
READ_ENGINE = "psync"


@dataclass(frozen=True)
class FillTiming:
    """Sizes and durations of the fill drive and the speed profile under one profile."""

    #: fill passes: SEQ block size and queue depth, number of 100 % passes
    block_size: int
    iodepth: int
    passes: int
    #: fio log window (log_avg_msec)
    log_ms: int
    #: speed profile: the quantum, the moving average's samples, the sustained percentile
    quantum: int
    moving_n: int
    sustained_pct: float
    #: the full-span read: block size and queue depth (dd's: bs=1M, one at a time)
    read_block: int
    read_iodepth: int
    #: when a pass leaves its cache
    cache: CacheRule


#: full: the method's numbers (seed 000: 128 KiB QD256, 100 ms; seed 002: 128 MiB quanta,
#: N = 64 as for its SSD).  quick: the same workload; on a short span (1 GiB scratch: about
#: 0.4 s a pass) 100 ms windows leave 4 points, so windows are 10 ms, quanta 32 MiB (one
#: or more windows each on scratch), the moving average 8 quanta and the cache rule a tenth
#: as long (0.5 s, 128 MiB).
PROFILES: dict[str, FillTiming] = {
    "full": FillTiming(
        block_size=128 * KiB,
        iodepth=256,
        passes=2,
        log_ms=100,
        quantum=128 * MiB,
        moving_n=64,
        sustained_pct=1.0,
        read_block=1 * MiB,
        read_iodepth=1,
        cache=CacheRule(window=5, plateau=10, drop=0.7, min_s=5.0, min_bytes=1 * GiB),
    ),
    "quick": FillTiming(
        block_size=128 * KiB,
        iodepth=256,
        passes=2,
        log_ms=10,
        quantum=32 * MiB,
        moving_n=8,
        sustained_pct=1.0,
        read_block=1 * MiB,
        read_iodepth=1,
        cache=CacheRule(window=5, plateau=10, drop=0.7, min_s=0.5, min_bytes=128 * MiB),
    ),
}


@dataclass(frozen=True)
class Agreement:
    """How far apart the plugin's full-span read and dd's may lie: a factor either way.

    Both tools issue the same reads (1 MiB, one at a time, direct I/O) to the same
    span seconds apart, so a broken measurement is off by far more: a unit slip
    (KiB for MiB) by 1024, bits for bytes by 8, a read served by a cache instead
    of the device by several.  ``device``: a real drive, whose reads vary little
    (seed 002 found cp and its tool almost identical over 960 GB); 1.5 leaves room
    for a drive still busy folding its SLC cache after the fill.  ``scratch``: a
    direct-I/O loop device on a shared VM is not steady; on scratch:1G the same
    1 GiB read by the same tool ran from 817 to 2,441 MiB/s (fio) and from 763 to
    2,148 MiB/s (dd), and dd / fio in the suite from 0.45 to 2.63 (3.2 at worst).
    """

    device: float = 1.5
    scratch: float = 4.0

    def factor(self, scratch: bool) -> float:
        return self.scratch if scratch else self.device


SELF_CHECK = Agreement()


def timing(profile: Profile) -> FillTiming:
    """The table row of *profile*."""
    return PROFILES[profile.name]


def idle_gap_s(profile: Profile) -> float:
    """The rest between the two passes under *profile* (seconds)."""
    return profile.seconds(profile.idle.fill_gap_s)


def fill_job(number: int, span: int, row: FillTiming) -> FioJob:
    """Fill pass *number*: one SEQ write pass over the span, logged every ``row.log_ms``.

    The span is taken down to whole blocks: fio rounds a size that is not a multiple
    of the block size *up* and would write past the span (checked with fio 3.33).
    """
    return FioJob(
        name=f"fill-pass-{number}",
        pattern="seq",
        block_size=row.block_size,
        iodepth=row.iodepth,
        read_pct=0,
        size=span // row.block_size * row.block_size,
        io_log=True,
    )


def read_span(span: int, row: FillTiming) -> int:
    """The read's span: whole read blocks (dd counts blocks)."""
    return span // row.read_block * row.read_block


def read_job(span: int, row: FillTiming) -> FioJob:
    """The speed profile's full-span SEQ read, shaped like dd's."""
    return FioJob(
        name="speed-read",
        pattern="seq",
        block_size=row.read_block,
        iodepth=row.read_iodepth,
        read_pct=100,
        size=read_span(span, row),
        io_log=True,
        ioengine=READ_ENGINE,
    )


#: the dd cross-check: chunks over the span, each read by dd and by fio in turn
CHECK_CHUNKS = 8
#: a chunk reads at most this much (1 TB drive: 8 GiB per tool, not the whole span again)
CHECK_CHUNK_MAX = 1 << 30


def check_chunks(span: int, row: FillTiming) -> list[tuple[int, int]]:
    """(offset, size) of the chunks the cross-check reads, spread evenly over the read span."""
    whole = read_span(span, row)
    size = min(whole // CHECK_CHUNKS, CHECK_CHUNK_MAX) // row.read_block * row.read_block
    step = whole // CHECK_CHUNKS // row.read_block * row.read_block
    return [(index * step, size) for index in range(CHECK_CHUNKS)] if size else [(0, whole)]


def check_job(index: int, offset: int, size: int, row: FillTiming) -> FioJob:
    """fio's read of one cross-check chunk: the speed profile read's shape, no log."""
    return FioJob(
        name=f"check-{index}",
        pattern="seq",
        block_size=row.read_block,
        iodepth=row.read_iodepth,
        read_pct=100,
        offset=offset,
        size=size,
        ioengine=READ_ENGINE,
        percentiles=(),
    )


def dd_argv(env: str, dd: str, device: Path, chunk: tuple[int, int], row: FillTiming) -> list[str]:
    """dd reading ``chunk`` (offset, size) with direct I/O, in the C locale (its report is parsed).

    *env* and *dd* are the programs' paths.
    """
    offset, size = chunk
    return [
        env,
        "LC_ALL=C",
        dd,
        f"if={device}",
        "of=/dev/null",
        f"bs={row.read_block}",
        "iflag=direct",
        f"skip={offset // row.read_block}",
        f"count={size // row.read_block}",
    ]


COREUTILS = "install coreutils"


def dd_read(
    device: Path,
    chunk: tuple[int, int],
    row: FillTiming,
    folder: Path,
    timeout_s: float,
    *,
    machine: Machine,
) -> tuple[int, float]:
    """dd reads *chunk* of *device* on *machine* (see :func:`dd_argv`): (bytes, seconds)."""
    env, dd = machine.which("env", COREUTILS), machine.which("dd", COREUTILS)
    argv = dd_argv(env, dd, device, chunk, row)
    report = machine.run(argv, timeout=timeout_s, artifacts=folder, name="dd").check("dd")
    return parse_dd(report.stderr)
