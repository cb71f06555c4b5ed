"""A dm-log-writes log read and replayed: the disk as it stands after a power cut.

Linux's dm-log-writes target and QEMU's ``blklogwrites`` block driver log every
write, flush and discard a disk completes, in completion order, in one format:

* sector 0, the super: le64 magic ``0x6a736677736872``, le64 version 1, le64 the
  number of entries, le32 the log's sector size;
* from sector 1, the entries, each a header in a sector of its own (le64 sector,
  le64 nr_sectors, le64 flags, le64 data_len) followed by its data: ``nr_sectors``
  sectors for a write (none for a discard, a flush or a mark; a mark's name is in
  the ``data_len`` bytes after it).

Sectors are the log's sector size.  QEMU writes the super only on a flush, so
its count is the entries up to the last flush (and before the first flush the super
is zeroes); a write completed after it is in the file past that count.
:func:`read_log` reads both, and stops at the first header that cannot be one (the
zeroes past the end of the log).

A drive with a volatile write cache promises only what a flush covered: after a
power cut it may hold any subset of the writes it completed after the last flush.
A :class:`Cut` is one such state: the entries up to a flush (applied in order)
plus the chosen later writes; :func:`rebuild` writes the disk it leaves.
"""

from __future__ import annotations

import random
import shutil
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pytest_ssd.errors import SsdError

MAGIC = 0x6A736677736872
VERSION = 1
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16
FLAG_MASK = FLUSH | FUA | DISCARD | MARK | METADATA
_SUPER = struct.Struct("<QQQI")
_ENTRY = struct.Struct("<QQQQ")
#: data copied at a time while replaying
_CHUNK = 1 << 20


class LogError(SsdError):
    """A file that is not a write log, or a log that does not fit the disk."""


@dataclass(frozen=True)
class Entry:
    """One logged request: a write (its data at *data_at* in the log), a flush, a discard."""

    index: int
    sector: int
    nr_sectors: int
    flags: int
    data_len: int
    #: where its data starts in the log file (bytes)
    data_at: int

    @property
    def flush(self) -> bool:
        return bool(self.flags & FLUSH)

    @property
    def write(self) -> bool:
        """A write of data (not a discard, flush or mark)."""
        return self.nr_sectors > 0 and not self.flags & (DISCARD | MARK)

    @property
    def durable(self) -> bool:
        """A flush, or a write the drive stored before completing it (FUA)."""
        return self.flush or (self.write and bool(self.flags & FUA))


@dataclass(frozen=True)
class WriteLog:
    """A log read from *path*: its sector size and its entries, in completion order."""

    path: Path
    sectorsize: int
    #: entries the super counts (QEMU: those up to its last flush)
    counted: int
    entries: tuple[Entry, ...]

    def flushes(self, start: int = 0) -> list[int]:
        """Indexes of the flush entries from *start* on."""
        return [e.index for e in self.entries[start:] if e.flush]

    def at_last_flush(self, start: int = 0, later: Iterable[int] = ()) -> Cut:
        """The cut right after the last flush at or after *start*, keeping *later* writes
        (indexes after that flush) and every FUA write after it; before any flush, at *start*."""
        flushes = self.flushes(start)
        upto = flushes[-1] + 1 if flushes else start
        after = self.entries[upto:]
        kept = {e.index for e in after if e.durable and e.write} | set(later)
        bad = sorted(i for i in kept if not (upto <= i < len(self.entries)))
        if bad:
            raise LogError(f"{self.path}: entries {bad} are not after the cut at entry {upto}")
        return Cut(start=start, upto=upto, later=frozenset(kept))

    def random_later(self, cut: Cut, seed: int) -> Cut:
        """*cut* plus a random half (by *seed*) of the writes after it: a cache that lost some."""
        pick = random.Random(seed)
        after = [e.index for e in self.entries[cut.upto :] if e.write]
        chosen = {i for i in after if pick.random() < 0.5}
        return Cut(start=cut.start, upto=cut.upto, later=cut.later | chosen)


@dataclass(frozen=True)
class Cut:
    """A disk after a power cut: entries [start, upto) applied in order, then *later* ones."""

    start: int
    upto: int
    later: frozenset[int] = field(default_factory=frozenset)

    def applied(self, log: WriteLog) -> list[Entry]:
        return [*log.entries[self.start : self.upto], *(log.entries[i] for i in sorted(self.later))]

    def describe(self, log: WriteLog) -> str:
        lost = sum(1 for e in log.entries[self.upto :] if e.write and e.index not in self.later)
        return (
            f"cut after entry {self.upto} of {len(log.entries)} ({len(self.later)} later"
            f" write(s) kept, {lost} lost)"
        )


def read_log(path: Path, unwritten_super_sectorsize: int = 512) -> WriteLog:
    """Read the log at *path*: every entry the super counts, and the valid ones after.

    A log whose super is still zeroes (QEMU writes it at the first flush) is read with
    *unwritten_super_sectorsize* (QEMU's default ``log-sector-size``)."""
    with path.open("rb") as fh:
        raw = fh.read(_SUPER.size)
        if len(raw) < _SUPER.size:
            raise LogError(f"{path}: {len(raw)} bytes, too short for a write log's super")
        magic, version, counted, sectorsize = _SUPER.unpack(raw)
        if not any(raw):  # QEMU writes the super at the first flush: none yet
            counted, sectorsize = 0, unwritten_super_sectorsize
        elif magic != MAGIC or version != VERSION:
            raise LogError(
                f"{path}: not a dm-log-writes log (magic {magic:#x} version {version},"
                f" wanted {MAGIC:#x} version {VERSION})"
            )
        if sectorsize < _ENTRY.size or sectorsize & (sectorsize - 1):
            raise LogError(f"{path}: sector size {sectorsize} is not a power of two >= 32")
        size = path.stat().st_size
        entries: list[Entry] = []
        at = sectorsize
        while at + _ENTRY.size <= size:
            fh.seek(at)
            entry = _entry(len(entries), fh.read(_ENTRY.size), at + sectorsize, sectorsize)
            end = entry.data_at + _data_sectors(entry, sectorsize) * sectorsize
            if (
                entry.flags & ~FLAG_MASK
                or (entry.flags == 0 and not entry.nr_sectors)
                or end > size
            ):
                if len(entries) < counted:
                    raise LogError(
                        f"{path}: entry {len(entries)} (at byte {at}) is not valid but the"
                        f" super counts {counted} entries"
                    )
                break
            entries.append(entry)
            at = end
    if len(entries) < counted:
        raise LogError(f"{path}: the super counts {counted} entries, the file holds {len(entries)}")
    return WriteLog(path, sectorsize, counted, tuple(entries))


def _entry(index: int, raw: bytes, data_at: int, sectorsize: int) -> Entry:
    sector, nr_sectors, flags, data_len = _ENTRY.unpack(raw)
    return Entry(index, sector, nr_sectors, flags, data_len, data_at)


def _data_sectors(entry: Entry, sectorsize: int) -> int:
    if entry.flags & DISCARD:
        return 0
    if entry.nr_sectors:
        return entry.nr_sectors
    return -(-entry.data_len // sectorsize)  # a mark's name


def rebuild(log: WriteLog, cut: Cut, image: Path, base: Path | None, size: int) -> int:
    """Write at *image* the disk of *size* bytes that *cut* leaves, starting from *base*
    (None: zeroes); the number of entries applied."""
    if base is None:
        with image.open("wb") as out:
            out.truncate(size)
    else:
        shutil.copyfile(base, image)
    applied = cut.applied(log)
    with log.path.open("rb") as src, image.open("r+b") as out:
        for entry in applied:
            _apply(log, entry, src, out, size)
    return len(applied)


def restore(log: WriteLog, rebuilt: Path, live: Path, start: int = 0) -> None:
    """Make *live* (a disk that took every entry from *start* on) equal *rebuilt*: copy
    back each range an entry touched, in place (the file stays the one a VM has open)."""
    with rebuilt.open("rb") as src, live.open("r+b") as out:
        for entry in log.entries[start:]:
            if entry.nr_sectors and not entry.flags & MARK:
                offset = entry.sector * log.sectorsize
                _copy(src, offset, out, offset, entry.nr_sectors * log.sectorsize)


def _apply(log: WriteLog, entry: Entry, src: BinaryIO, out: BinaryIO, size: int) -> None:
    if not entry.nr_sectors or entry.flags & MARK:
        return
    offset, length = entry.sector * log.sectorsize, entry.nr_sectors * log.sectorsize
    if offset + length > size:
        raise LogError(
            f"{log.path}: entry {entry.index} writes bytes {offset}..{offset + length},"
            f" past the disk's {size}"
        )
    if entry.flags & DISCARD:  # reads back as zeroes on the rebuilt image (a loop device's)
        out.seek(offset)
        for done in range(0, length, _CHUNK):
            out.write(bytes(min(_CHUNK, length - done)))
        return
    _copy(src, entry.data_at, out, offset, length)


def _copy(src: BinaryIO, at: int, out: BinaryIO, offset: int, length: int) -> None:
    src.seek(at)
    out.seek(offset)
    for done in range(0, length, _CHUNK):
        out.write(src.read(min(_CHUNK, length - done)))
