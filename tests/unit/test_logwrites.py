"""The dm-log-writes reader and replayer: QEMU 7.2's own log (tests/golden/logwrites) and
small logs built here, every kind of entry, the cut at the last flush and what it keeps."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from pytest_ssd.methods.powerloss.logwrites import (
    DISCARD,
    FLUSH,
    FUA,
    MAGIC,
    MARK,
    Cut,
    LogError,
    read_log,
    rebuild,
    restore,
)

GOLDEN = Path(__file__).parents[1] / "golden" / "logwrites" / "qemu-7.2-abort.log"
SECTOR = 512
KIB = 1024


class LogFile:
    """A dm-log-writes log written entry by entry (the format, not QEMU's code)."""

    def __init__(self, sectorsize: int = SECTOR) -> None:
        self.sectorsize = sectorsize
        self.body = b""
        self.entries = 0

    def entry(self, sector: int, nr: int, flags: int, data: bytes = b"", data_len: int = 0) -> None:
        header = struct.pack("<QQQQ", sector, nr, flags, data_len)
        pad = -len(data) % self.sectorsize
        self.body += header.ljust(self.sectorsize, b"\0") + data + bytes(pad)
        self.entries += 1

    def write(self, offset: int, data: bytes, flags: int = 0) -> None:
        self.entry(offset // self.sectorsize, len(data) // self.sectorsize, flags, data)

    def save(self, path: Path, counted: int | None = None) -> Path:
        counted = self.entries if counted is None else counted
        superblock = struct.pack("<QQQI", MAGIC, 1, counted, self.sectorsize)
        path.write_bytes(superblock.ljust(self.sectorsize, b"\0") + self.body)
        return path


def test_qemu_7_2s_log_is_read_with_the_writes_after_its_last_flush() -> None:
    log = read_log(GOLDEN)
    assert (log.sectorsize, log.counted, len(log.entries)) == (SECTOR, 3, 7)
    kinds = [(e.sector, e.nr_sectors, e.flags) for e in log.entries]
    written = [(0, 8, 0), (16, 8, 0), (0, 0, FLUSH), (32, 8, 0), (0, 1, 0), (48, 8, 0)]
    assert kinds == [*written, (16, 8, DISCARD)]
    cut = log.at_last_flush()
    assert (cut.upto, cut.later) == (3, frozenset())
    assert cut.describe(log) == "cut after entry 3 of 7 (0 later write(s) kept, 3 lost)"


def test_qemu_7_2s_log_rebuilds_the_disk_as_a_cut_leaves_it(tmp_path: Path) -> None:
    log = read_log(GOLDEN)
    at_flush = tmp_path / "flush.img"
    assert rebuild(log, log.at_last_flush(), at_flush, None, 64 * KIB) == 3
    disk = at_flush.read_bytes()
    assert disk[: 4 * KIB] == b"\xaa" * 4 * KIB and disk[8 * KIB : 12 * KIB] == b"\xbb" * 4 * KIB
    assert disk[16 * KIB : 20 * KIB] == bytes(4 * KIB), "the write after the flush is lost"
    everything = tmp_path / "all.img"
    rebuild(log, Cut(0, len(log.entries)), everything, None, 64 * KIB)
    disk = everything.read_bytes()
    assert disk[:512] == b"\xdd" * 512 and disk[512 : 4 * KIB] == b"\xaa" * (4 * KIB - 512)
    assert disk[16 * KIB : 20 * KIB] == b"\xcc" * 4 * KIB
    assert disk[8 * KIB : 12 * KIB] == bytes(4 * KIB), "the discard reads as zeroes"
    # only the 512-byte write kept of the later ones (a cache that wrote back that one)
    some = tmp_path / "some.img"
    rebuild(log, log.at_last_flush(later=[4]), some, None, 64 * KIB)
    disk = some.read_bytes()
    assert disk[:512] == b"\xdd" * 512 and disk[16 * KIB : 20 * KIB] == bytes(4 * KIB)


def test_a_built_log_keeps_fua_writes_skips_marks_and_stops_at_zeroes(tmp_path: Path) -> None:
    built = LogFile()
    built.write(0, b"\x01" * 1024)
    built.entry(0, 0, FLUSH)
    built.write(1024, b"\x02" * 512)
    built.write(2048, b"\x03" * 512, flags=FUA)  # stored before it completed: survives
    built.entry(0, 0, MARK, b"mark-one", data_len=8)
    built.write(4096, b"\x04" * 512)
    path = built.save(tmp_path / "log", counted=2)
    with path.open("ab") as fh:  # the sparse end of a log file: not an entry
        fh.write(bytes(4 * SECTOR))
    log = read_log(path)
    assert len(log.entries) == 6 and log.entries[4].flags == MARK
    cut = log.at_last_flush()
    assert (cut.upto, sorted(cut.later)) == (2, [3])
    image = tmp_path / "disk"
    rebuild(log, cut, image, None, 8 * KIB)
    disk = image.read_bytes()
    assert disk[:1024] == b"\x01" * 1024 and disk[2048:2560] == b"\x03" * 512
    assert disk[1024:1536] == bytes(512) and disk[4096:4608] == bytes(512)


def test_a_random_half_of_the_later_writes_is_kept_the_same_for_a_seed(tmp_path: Path) -> None:
    built = LogFile()
    built.entry(0, 0, FLUSH)
    for n in range(40):
        built.write(n * SECTOR, bytes([n + 1]) * SECTOR)
    log = read_log(built.save(tmp_path / "log", counted=1))
    first, again = (log.random_later(log.at_last_flush(), seed=3) for _ in range(2))
    assert first == again and 5 < len(first.later) < 35
    assert first != log.random_later(log.at_last_flush(), seed=4)


def test_restore_brings_a_live_disk_back_to_the_cut_in_place(tmp_path: Path) -> None:
    built = LogFile()
    built.write(0, b"\x01" * 512)
    built.entry(0, 0, FLUSH)
    built.write(0, b"\x02" * 512)
    built.write(1024, b"\x03" * 512)
    log = read_log(built.save(tmp_path / "log", counted=2))
    live = tmp_path / "live"
    rebuild(log, Cut(0, len(log.entries)), live, None, 4 * KIB)  # the disk before the cut
    inode = live.stat().st_ino
    rebuilt = tmp_path / "cut"
    rebuild(log, log.at_last_flush(), rebuilt, None, 4 * KIB)
    restore(log, rebuilt, live)
    assert live.read_bytes() == rebuilt.read_bytes() and live.stat().st_ino == inode
    assert live.read_bytes()[:512] == b"\x01" * 512


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"not a log" * 100, "not a dm-log-writes log (magic 0x"),
        (struct.pack("<QQQI", MAGIC, 1, 0, 100).ljust(512, b"\0"), "sector size 100"),
        (struct.pack("<QQQI", MAGIC, 1, 5, 512).ljust(512, b"\0"), "the super counts 5 entries"),
        (b"short", "too short for a write log's super"),
    ],
)
def test_what_is_not_a_log_is_one_line(tmp_path: Path, raw: bytes, said: str) -> None:
    path = tmp_path / "log"
    path.write_bytes(raw)
    with pytest.raises(LogError, match="^" + str(path)) as caught:
        read_log(path)
    assert said in str(caught.value)


def test_a_log_before_its_first_flush_has_a_super_of_zeroes(tmp_path: Path) -> None:
    built = LogFile()
    built.write(512, b"\x07" * 512)
    path = built.save(tmp_path / "log")
    path.write_bytes(bytes(SECTOR) + path.read_bytes()[SECTOR:])  # QEMU: no flush, no super
    log = read_log(path)
    assert (log.counted, len(log.entries)) == (0, 1)
    cut = log.at_last_flush()
    assert (cut.upto, cut.describe(log)) == (
        0,
        "cut after entry 0 of 1 (0 later write(s) kept, 1 lost)",
    )


def test_a_write_past_the_disk_is_refused(tmp_path: Path) -> None:
    built = LogFile()
    built.write(8 * KIB, b"\x01" * 512)
    built.entry(0, 0, FLUSH)
    log = read_log(built.save(tmp_path / "log"))
    with pytest.raises(LogError, match=r"entry 0 writes bytes 8192\.\.8704, past the disk's 4096"):
        rebuild(log, log.at_last_flush(), tmp_path / "disk", None, 4 * KIB)
    with pytest.raises(LogError, match=r"entries \[0\] are not after the cut at entry 2"):
        log.at_last_flush(later=[0])
