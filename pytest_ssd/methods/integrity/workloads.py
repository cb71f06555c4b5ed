"""Data integrity (``suites/qual``): the fio jobs, with fio's own verification.

Every block written carries fio's verification header (``verify=crc32c``): a magic
number, its length, the seed of its data, **its own offset**, the write's number and a
CRC32C of the block.  The header is written every :func:`header_interval` bytes
(``verify_interval``: 4 KiB, or the logical block when larger), so 4 KiB random
overwrites keep every block checkable and a read in large blocks checks each one.  A
block read back from another offset (a misdirected write) fails the offset check; one
never written (a lost write on a fresh span) fails the magic; changed bits fail the CRC.

- :func:`fill_job`: SEQ 128 KiB QD32, one pass over the span, headers written.
- :func:`overwrite_job`: RND 4 KiB QD32, 1 x the span (full: 2 x), verified by the job
  itself (``do_verify``: fio checks each block against the last write it logged, its
  write number included, so a lost overwrite is caught too); ``verify_backlog``
  verifies as it goes on long runs (the full profile).
- :func:`check_job`: SEQ 128 KiB QD32 read of what was written, every header checked;
  the first mismatch stops it (``verify_fatal``) and fio dumps the block
  (``verify_dump``) in the run's folder (not on a test host: fio's server would leave it
  in its working folder there; the block is read back instead, :mod:`.run`).
- :func:`trim_job`: fio's trim (``rw=trim``, psync: a discard of each block).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.fio.job import FioJob, Pattern, Span
from pytest_ssd.state.profile import Profile

KiB, MiB = 1 << 10, 1 << 20
#: fio's verification: a CRC32C of each block in its header (fio's "crc32c-intel" when the
#: CPU has it)
VERIFY = "crc32c"
FILL_BLOCK = 128 * KiB
RND_BLOCK = 4 * KiB
QD = 32
TRIM_BLOCK = 1 * MiB
#: blocks written between verifications in the overwrite on the full profile
BACKLOG = 4096


@dataclass(frozen=True)
class Range:
    """A byte range of the device: ``offset`` and ``size``."""

    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


def header_interval(identity: DeviceIdentity) -> int:
    """Bytes between verification headers: 4 KiB, or the logical block when larger."""
    return max(4 * KiB, identity.logical_block_size)


def tiling(span: Span, *sizes: int) -> int:
    """The first of *sizes* that tiles *span* (its offset and size)."""
    for size in sizes:
        if span.offset % size == 0 and span.size % size == 0:
            return size
    return sizes[-1]


def _headers(interval: int, *, check: bool, dump: bool = True) -> tuple[tuple[str, str], ...]:
    """fio's verification options; *dump*: fio writes a failing block to its working folder
    (``verify_dump``: where fio is a child of this process, the run's folder)."""
    written = (("verify", VERIFY), ("verify_interval", str(interval)), ("verify_state_save", "0"))
    if not check:
        return (*written, ("do_verify", "0"))
    dumped = ("verify_dump", "1" if dump else "0")
    return (*written, ("do_verify", "1"), ("verify_fatal", "1"), dumped)


def fill_job(name: str, span: Span, interval: int, pattern: Pattern = "seq") -> FioJob:
    """One pass over *span*, every block with its header: sequential in 128 KiB blocks, or
    (*pattern* ``rnd``, a state's random region) random 4 KiB blocks, each once (fio's map)."""
    block = FILL_BLOCK if pattern == "seq" else max(RND_BLOCK, interval)
    return FioJob.on(
        span,
        name=name,
        pattern=pattern,
        block_size=tiling(span, block, interval),
        iodepth=QD,
        read_pct=0,
        percentiles=(),
        extra=_headers(interval, check=False),
    )


def overwrite_job(
    name: str, span: Span, interval: int, profile: Profile, *, dump: bool = True
) -> FioJob:
    """RND 4 KiB QD32 writes, ``passes`` x *span* (full: 2, verified as they go), verified.

    With ``verify_backlog`` fio counts the verifying reads in ``io_size`` too (fio 3.33,
    measured: 2 x the span asked wrote it once): the amount is doubled for them.
    """
    block = max(RND_BLOCK, interval)
    passes = 1 if profile.quick else 2
    backlog = () if profile.quick else (("verify_backlog", str(BACKLOG)),)
    amount = passes * span.size * (2 if backlog else 1)
    return FioJob.on(
        span,
        name=name,
        pattern="rnd",
        block_size=block,
        iodepth=QD,
        read_pct=0,
        io_bytes=amount,
        percentiles=(),
        extra=(*_headers(interval, check=True, dump=dump), *backlog),
    )


def check_job(name: str, span: Span, interval: int, *, dump: bool = True) -> FioJob:
    """A sequential read of *span*, every header and checksum checked (*dump*: see
    :func:`_headers`)."""
    return FioJob.on(
        span,
        name=name,
        pattern="seq",
        block_size=tiling(span, FILL_BLOCK, interval),
        iodepth=QD,
        read_pct=100,
        percentiles=(),
        extra=_headers(interval, check=True, dump=dump),
    )


def trim_job(name: str, span: Span) -> FioJob:
    """Deallocate *span*: fio's trim, a discard per block (psync: libaio does not trim)."""
    return FioJob.on(
        span,
        name=name,
        pattern="seq",
        block_size=tiling(span, TRIM_BLOCK, 4 * KiB, 512),
        read_pct=0,
        ioengine="psync",
        percentiles=(),
        extra=(("rw", "trim"),),
    )


@dataclass(frozen=True)
class Reads:
    """What a deallocated block reads as, as the device declares it; ``byte`` None: not said."""

    byte: int | None
    why: str

    @property
    def what(self) -> str:
        return {0x00: "zeroes", 0xFF: "0xFF bytes"}.get(self.byte or 0, "?")


def reads_deallocated(identity: DeviceIdentity) -> Reads:
    """What *identity* declares a deallocated block reads as.

    NVMe: ``id-ns`` DLFEAT bits 2:0 (1 zeroes, 2 0xFF, 0 not reported); a loop device
    punches a hole in its backing file and a file gets one: zeroes.  Anything else
    declares nothing.
    """
    if identity.nvme is not None:
        dlfeat = identity.nvme.namespace.dlfeat & 0x7
        byte = {1: 0x00, 2: 0xFF}.get(dlfeat)
        said = {1: "reads zeroes", 2: "reads 0xFF"}.get(dlfeat, "does not say")
        return Reads(byte, f"id-ns DLFEAT bits 2:0 = {dlfeat}: a deallocated block {said}")
    if identity.transport == "loop":
        return Reads(0x00, "a loop device punches a hole in its backing file: zeroes")
    if identity.kind == "file":
        return Reads(0x00, "a punched hole in a file reads as zeroes")
    return Reads(None, f"a {identity.transport} device declares nothing of deallocated blocks")


#: fio's verification header magic (``FIO_HDR_MAGIC``), little-endian, at a block's start
HEADER_MAGIC = 0xACCA


def holds_header_of(data: bytes, offset: int) -> bool:
    """Whether *data*, read at *offset*, still holds fio's header written for that offset.

    The header (fio ``verify.h``): u16 magic, u16 verify type, u32 length, u64 seed,
    u64 offset, ...
    """
    if len(data) < 24:
        return False
    magic = int.from_bytes(data[0:2], "little")
    return magic == HEADER_MAGIC and int.from_bytes(data[16:24], "little") == offset
