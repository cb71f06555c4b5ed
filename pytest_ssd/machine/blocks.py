"""Blocks of a device read with direct I/O: here in this process, elsewhere with ``dd``.

A purge's read-back check reads a sample of blocks where the device is
(:meth:`~.machine.Machine.read_blocks`): this machine reads them itself with
``O_DIRECT`` (buffered where the file system refuses it: tmpfs); another machine runs
``dd iflag=direct`` once for all of them and sends each block back as hex.
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Iterator

from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.ssh import MARK

#: ``sh -c READ_THERE sh PATH UNIT BLOCK...``: each block as hex, after a mark; a block
#: that cannot be read ends it with dd's error and exit 1 (as here: not an empty block)
READ_THERE = f"""p=$1 u=$2; shift 2
t=$(mktemp) || exit 1
trap 'rm -f "$t" "$t.e"' EXIT
for b; do
  dd if="$p" of="$t" bs="$u" skip="$b" count=1 iflag=direct 2>"$t.e" ||
    {{ cat "$t.e" >&2; exit 1; }}
  echo "{MARK}block $b"; od -An -v -tx1 "$t"
done
"""
READ_TIMEOUT_S = 600.0


def _open(path: str) -> tuple[int, bool]:
    """(fd, direct): O_DIRECT where the file system allows it (tmpfs does not)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECT), True
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    return os.open(path, os.O_RDONLY), False


def read_here(path: str, unit: int, blocks: list[int]) -> Iterator[tuple[int, bytes]]:
    """(block, data) for each block, read with O_DIRECT; buffered where O_DIRECT is refused.

    Raises :class:`DeviceError` when they cannot be read (as ``dd`` elsewhere), at once.
    """
    try:
        fd, direct = _open(path)
    except OSError as exc:
        raise DeviceError(exc.strerror or str(exc)) from None
    return _read(path, fd, direct, unit, blocks)


def _read(
    path: str, fd: int, direct: bool, unit: int, blocks: list[int]
) -> Iterator[tuple[int, bytes]]:
    buf = mmap.mmap(-1, unit)  # page-aligned, as O_DIRECT needs
    try:
        for block in blocks:
            try:
                got = os.preadv(fd, [buf], block * unit)
            except OSError as exc:
                # some file systems accept O_DIRECT at open and refuse it at read (EINVAL)
                if exc.errno != errno.EINVAL or not direct:
                    raise
                os.close(fd)
                fd, direct = os.open(path, os.O_RDONLY), False
                got = os.preadv(fd, [buf], block * unit)
            yield block, buf[:got]
    except OSError as exc:
        raise DeviceError(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
        buf.close()


def parse_blocks(text: str, blocks: list[int]) -> Iterator[tuple[int, bytes]]:
    """What :data:`READ_THERE` printed, as (block, data) in the order of *blocks*."""
    found: dict[int, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith(f"{MARK}block "):
            current = found.setdefault(int(line.split()[-1]), [])
        else:
            current.append(line)
    for block in blocks:
        yield block, bytes.fromhex("".join(found.get(block, [])))
