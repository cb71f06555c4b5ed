"""The integrity checks' steps on the ``ssd`` fixture: write with fio's headers, change the
device's state, read back what was written; each check's outcome in one line.

Every write goes through ``ssd.run_jobs`` (the safety guard, the state's accounting, the
written map); the verification runs are not measurements (``record=False``).  A read
addresses only what the check wrote with headers: anything else would be prefilled by
the fixture with data fio cannot verify, so it is refused as a bug.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_ssd.bench import SsdBench
from pytest_ssd.device.identity import binary_size
from pytest_ssd.errors import ConfigError, DeviceError, FioError, present
from pytest_ssd.fio.job import FioJob, Pattern, Span
from pytest_ssd.methods.integrity.analysis import Mismatch, first_mismatch
from pytest_ssd.methods.integrity.workloads import (
    TRIM_BLOCK,
    VERIFY,
    Range,
    Reads,
    check_job,
    fill_job,
    header_interval,
    holds_header_of,
    overwrite_job,
    reads_deallocated,
    trim_job,
)
from pytest_ssd.purge.verify import DEFAULT_SAMPLES, sample_blocks

#: the integrity record each check adds beside its qualification record (the section's rows)
RECORD = "integrity"
#: the trim check's span on the quick profile (the full profile: the state's whole region)
QUICK_TRIM_SPAN = 1 << 30


@dataclass(frozen=True)
class Outcome:
    """One check's verdict (pass / fail / not judged), its one line and what it covered."""

    check: str
    verdict: str
    detail: str
    values: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The ``integrity`` derived record."""
        return {"check": self.check, "verdict": self.verdict, "detail": self.detail, **self.values}


def _lbas(ssd: SsdBench, span: Span) -> str:
    lbs = ssd.dut.identity.logical_block_size
    return f"LBA {span.offset // lbs}-{(span.offset + span.size) // lbs - 1}"


def _failed_run(ssd: SsdBench, job: FioJob) -> tuple[Path, Mismatch] | None:
    """The mismatch fio reported in its last run whose first job is *job*, if it did."""
    folders = sorted(ssd.artifacts.glob(f"[0-9][0-9]-{job.name}"))
    if not folders:
        return None
    folder = folders[-1]
    said = "\n".join(
        (folder / name).read_text(errors="replace")
        for name in ("fio.stderr", "fio.stdout")
        if (folder / name).exists()
    )
    found = first_mismatch(said)
    return None if found is None else (folder, found)


def dumps_here(ssd: SsdBench) -> bool:
    """Whether fio dumps a failing block itself: where it is a child of this process (its
    working folder is the run's); a test host's fio server would leave it in its own."""
    return ssd.machine.children


def run_verified(ssd: SsdBench, *jobs: FioJob) -> Mismatch | None:
    """Run *jobs* (writes or verifying reads) in one fio process; fio's first mismatch, if any.

    A fio failure that is not a verification failure is raised as it is.  The failing
    block is kept in the run's folder of the test's artifacts and the mismatch names the
    files relative to the test's artifacts: fio's dumps, or on a test host the block as
    read back there (``<device>.<offset>.read-back``).
    """
    try:
        ssd.run_jobs(*jobs, record=False)
    except FioError:
        failed = _failed_run(ssd, jobs[0])
        if failed is None:
            raise
        folder, found = failed
        kept = tuple(f"{folder.name}/{name}" for name in found.dumps if (folder / name).exists())
        return replace(found, dumps=kept or (_read_back(ssd, folder, found),))
    return None


def _read_back(ssd: SsdBench, folder: Path, found: Mismatch) -> str:
    """The failing block read again on the device's machine, into *folder*: its file, from
    the test's artifacts (or why it was not kept)."""
    name = f"{Path(found.file).name}.{found.offset}.read-back"
    try:
        ((_, data),) = list(
            ssd.machine.read_blocks(str(ssd.dut.path), found.length, [found.offset // found.length])
        )
    except (DeviceError, ValueError) as exc:
        return f"{name} not kept: {exc}"
    (folder / name).write_bytes(data)
    return f"{folder.name}/{name}"


def _span_of(job: FioJob) -> Range:
    return Range(job.offset, present(job.size, f"the size of {job.name}"))


def verify_jobs(ssd: SsdBench, *jobs: FioJob) -> Mismatch | None:
    """Run *jobs*, reads checking every header and checksum, after making sure they read
    only what was written here (else the fixture would prefill with data fio cannot check)."""
    for job in jobs:
        span = _span_of(job)
        if not ssd.dut.written.covers(span.offset, span.end):
            raise ConfigError(
                f"integrity: [{span.offset}, {span.end}) is read back before it was written"
                " with fio's headers (the fixture would prefill it with data fio cannot verify)"
            )
    return run_verified(ssd, *jobs)


def verify_back(ssd: SsdBench, spans: list[Range], name: str) -> Mismatch | None:
    """Read *spans* back, every header and checksum checked (they must be written here)."""
    interval, dump = interval_of(ssd), dumps_here(ssd)
    jobs = [check_job(f"{name}-{n}", span, interval, dump=dump) for n, span in enumerate(spans, 1)]
    return verify_jobs(ssd, *jobs)


def judged(ssd: SsdBench, check: str, spans: list[Range], found: Mismatch | None) -> Outcome:
    """The outcome of reading *spans* back: pass, or fail naming the first bad LBA."""
    lbs = ssd.dut.identity.logical_block_size
    total = sum(s.size for s in spans)
    interval = header_interval(ssd.dut.identity)
    values: dict[str, Any] = {
        "spans": [[s.offset, s.end] for s in spans],
        "bytes": total,
        "header_interval": interval,
        "verify": VERIFY,
        "mismatch": None if found is None else found.as_dict(lbs),
    }
    if found is not None:
        return Outcome(check, "fail", found.line(lbs, check), values)
    where = ", ".join(_lbas(ssd, s) for s in spans)
    detail = (
        f"{binary_size(total)} ({where}) read back as written: {total // interval:,}"
        f" {VERIFY} headers, each naming its own offset"
    )
    return Outcome(check, "pass", detail, values)


def interval_of(ssd: SsdBench) -> int:
    return header_interval(ssd.dut.identity)


def _region(ssd: SsdBench, name: str) -> Range:
    region = ssd.region(name)
    return Range(region.offset, region.size)


# Each check's fio jobs, in the order it runs them: the check builds them with these, and so
# does the plan before a drive's first run (``pytest.mark.ssd_jobs(jobs=...)``: *ssd* is then
# the plan's stand-in, with the profile, the device's size and block, and the state's regions).


def fill_jobs(ssd: SsdBench, dump: bool = True) -> list[FioJob]:
    """after sequential fill: the state's span written SEQ, then read back."""
    span, interval = _region(ssd, "device"), interval_of(ssd)
    return [
        fill_job("integrity-fill", span, interval),
        check_job("integrity-verify-1", span, interval, dump=dump),
    ]


def overwrite_jobs(ssd: SsdBench, dump: bool = True) -> list[FioJob]:
    """after random overwrite: the random region written at random (fio's map: each block
    once, the state's region keeps its state), overwritten, read back."""
    return _overwritten(ssd, "integrity", _region(ssd, "rnd"), "rnd", dump)


def full_jobs(ssd: SsdBench, dump: bool = True) -> list[FioJob]:
    """drive full: every LBA written SEQ, overwritten at random across it, read back."""
    interval = interval_of(ssd)
    span = Range(0, ssd.dut.identity.size_bytes // interval * interval)
    return _overwritten(ssd, "integrity-full", span, "seq", dump)


def _overwritten(ssd: SsdBench, stem: str, span: Range, fill: Pattern, dump: bool) -> list[FioJob]:
    interval = interval_of(ssd)
    return [
        fill_job(f"{stem}-fill", span, interval, pattern=fill),
        overwrite_job(f"{stem}-overwrite", span, interval, ssd.profile, dump=dump),
        check_job("integrity-verify-1", span, interval, dump=dump),
    ]


def trim_jobs(ssd: SsdBench, dump: bool = True) -> list[FioJob]:
    """after trim: a span (quick: the state's first GiB) written, its middle third trimmed,
    the other two read back."""
    region = _region(ssd, "device")
    span = Range(region.offset, min(region.size, QUICK_TRIM_SPAN)) if ssd.profile.quick else region
    before, cut, after = _thirds(span)
    interval = interval_of(ssd)
    return [
        fill_job("integrity-trim-fill", span, interval),
        trim_job("integrity-trim", cut),
        check_job("integrity-verify-1", before, interval, dump=dump),
        check_job("integrity-verify-2", after, interval, dump=dump),
    ]


def _written_then_read(ssd: SsdBench, check: str, jobs: list[FioJob]) -> Outcome:
    """*jobs*' writes in one fio process, then its reads in another (each read checking every
    header): the outcome of the reads' spans."""
    writes = [job for job in jobs if job.writes]
    reads = [job for job in jobs if not job.writes]
    found = run_verified(ssd, *writes) or verify_jobs(ssd, *reads)
    return judged(ssd, check, [_span_of(job) for job in reads], found)


def after_fill(ssd: SsdBench) -> Outcome:
    """The state's span written sequentially with headers, then read back."""
    return _written_then_read(ssd, "after sequential fill", fill_jobs(ssd, dumps_here(ssd)))


def after_overwrite(ssd: SsdBench) -> Outcome:
    """The random region written with headers, overwritten at random with fio verifying each
    block's last write, then all of it read back."""
    return _written_then_read(ssd, "after random overwrite", overwrite_jobs(ssd, dumps_here(ssd)))


def drive_full(ssd: SsdBench) -> Outcome:
    """Every LBA written with headers, overwritten at random across the whole device, all of
    it read back: the drive has no free block while it works."""
    return _written_then_read(ssd, "drive full", full_jobs(ssd, dumps_here(ssd)))


def _thirds(span: Range) -> tuple[Range, Range, Range]:
    """*span* cut in three at 1 MiB boundaries: before, trimmed, after."""
    third = span.size // 3 // TRIM_BLOCK * TRIM_BLOCK
    if third <= 0:
        raise ConfigError(f"integrity: a span of {span.size} B is too small to trim a third of")
    cut = span.offset + third
    return Range(span.offset, third), Range(cut, third), Range(cut + third, span.end - cut - third)


def after_trim(ssd: SsdBench) -> list[Outcome]:
    """A span written with headers, its middle third trimmed: the rest must read back as
    written (**after trim**), and the trimmed third as the device declares (**trimmed
    reads**)."""
    fill, trim, *reads = trim_jobs(ssd, dumps_here(ssd))
    found = run_verified(ssd, fill)
    cut = _span_of(trim)
    if found is None:
        run_verified(ssd, trim)
        ssd.dut.written.remove(cut.offset, cut.end)  # fio's trim is a write to the fixture
        found = verify_jobs(ssd, *reads)
    kept = judged(ssd, "after trim", [_span_of(job) for job in reads], found)
    return [kept, sampled(ssd, "trimmed reads", cut, "trimmed")]


def after_purge(ssd: SsdBench) -> Outcome:
    """Sampled blocks of the state's span after its purge: none may still hold data written
    before it (a fio header naming its offset), each reads as the device declares."""
    return sampled(ssd, "after purge", _region(ssd, "device"), "purged")


def sampled(ssd: SsdBench, check: str, span: Range, what: str) -> Outcome:
    """The first, last and 64 random logical blocks of *span*, read with direct I/O on the
    device's machine, against what a deallocated block reads as (:class:`Reads`)."""
    identity = ssd.dut.identity
    lbs = identity.logical_block_size
    first = span.offset // lbs
    picked = [first + n for n in sample_blocks(span.size // lbs, DEFAULT_SAMPLES, random.Random())]
    promise = reads_deallocated(identity)
    try:
        blocks = list(ssd.machine.read_blocks(str(ssd.dut.path), lbs, picked))
    except DeviceError as exc:
        raise DeviceError(f"integrity {check}: reading {what} blocks back: {exc}") from None
    values: dict[str, Any] = {
        "spans": [[span.offset, span.end]],
        "sampled": len(blocks),
        "expected": None if promise.byte is None else promise.what,
    }
    stale = [n for n, data in blocks if holds_header_of(data, n * lbs)]
    if stale:
        detail = (
            f"{check}: LBA {stale[0]} ({len(stale)} of {len(blocks)} sampled) still holds the"
            f" data written before it ({what}): fio's header naming offset {stale[0] * lbs}"
        )
        return Outcome(check, "fail", detail, values)
    return _as_declared(check, blocks, promise, what, values)


def _as_declared(
    check: str, blocks: list[tuple[int, bytes]], promise: Reads, what: str, values: dict[str, Any]
) -> Outcome:
    if promise.byte is None:
        return Outcome(
            check, "not judged", f"{promise.why}; no sampled block held old data", values
        )
    bad = [(n, data) for n, data in blocks if data.count(promise.byte) != len(data)]
    if bad:
        n, data = bad[0]
        detail = (
            f"{check}: LBA {n} ({len(bad)} of {len(blocks)} sampled {what} blocks) reads"
            f" {data[:8].hex()}..., not {promise.what} ({promise.why})"
        )
        return Outcome(check, "fail", detail, values)
    detail = f"all {len(blocks)} sampled {what} blocks read as {promise.what} ({promise.why})"
    return Outcome(check, "pass", detail, values)
