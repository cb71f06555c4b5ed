"""Read-back check after a purge: do sampled blocks read as the device promises?

What a purged block reads as: a punched hole in a file, and a discarded loop
device (the loop driver punches holes in its backing file), read as zeroes; an
NVMe namespace after sanitize or format reads as DLFEAT bits 2:0 say (1 zeroes,
2 0xFF, otherwise unspecified).  Nothing else is promised, so nothing is checked.
Blocks are read with O_DIRECT into a page-aligned (mmap) buffer, so the page
cache cannot answer for the device.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import DeviceError, PurgeError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge.methods import FORMAT, SANITIZE, PurgeMethod

DEFAULT_SAMPLES = 64
_DLFEAT_PATTERN = {1: (0x00, "zeroes"), 2: (0xFF, "0xFF bytes")}


@dataclass(frozen=True)
class Promise:
    """The byte every purged block should read back as, and why; ``byte`` None: no promise."""

    byte: int | None
    what: str | None
    why: str


@dataclass(frozen=True)
class Verification:
    """The read-back check: ok is None when the purge promised nothing."""

    promise: str | None
    block_size: int
    sampled: int
    matching: int
    ok: bool | None
    detail: str

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON results."""
        return {
            "promise": self.promise,
            "block_size": self.block_size,
            "sampled": self.sampled,
            "matching": self.matching,
            "ok": self.ok,
            "detail": self.detail,
        }


def promise(identity: DeviceIdentity, method: PurgeMethod) -> Promise:
    """What *method* promises that *identity*'s purged blocks read back as."""
    if identity.kind == "file" and method is PurgeMethod.PUNCH_HOLE:
        return Promise(0x00, "zeroes", "punched holes in a file read as zeroes")
    if identity.transport == "loop" and method is PurgeMethod.DISCARD:
        return Promise(0x00, "zeroes", "a loop device punches holes in its backing file")
    if identity.nvme is not None and (method in SANITIZE or method in FORMAT):
        dlfeat = identity.nvme.namespace.dlfeat & 0x7
        byte, what = _DLFEAT_PATTERN.get(dlfeat, (None, None))
        reads = f"deallocated blocks read as {what}" if what else "read-back is not specified"
        return Promise(byte, what, f"id-ns DLFEAT bits 2:0 = {dlfeat}: {reads}")
    return Promise(None, None, f"{method} on a {identity.transport} device promises no content")


def _unit(identity: DeviceIdentity) -> int:
    """Blocks of a file are file-system blocks: holes are punched in whole ones."""
    if identity.kind == "file":
        return max(identity.logical_block_size, identity.physical_block_size)
    return identity.logical_block_size


def _size(identity: DeviceIdentity) -> int:
    return Path(identity.path).stat().st_size if identity.kind == "file" else identity.size_bytes


def sample_blocks(count: int, samples: int, rng: random.Random) -> list[int]:
    """The first and last block and *samples* distinct random ones between them, sorted."""
    if count <= 0:
        return []
    inner = range(1, count - 1)
    picked = {0, count - 1, *rng.sample(inner, min(samples, len(inner)))}
    return sorted(picked)


#: ``read(path, unit, blocks)``: (block, data) of each block, read with direct I/O
BlockReader = Callable[[str, int, list[int]], Iterable[tuple[int, bytes]]]


def reader_on(machine: Machine) -> BlockReader:
    """The blocks of a path on *machine*, read there with direct I/O."""
    return machine.read_blocks


def verify(
    identity: DeviceIdentity,
    method: PurgeMethod,
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int | None = None,
    read: BlockReader,
) -> Verification:
    """Read the first, last and *samples* random blocks and compare them with the promise."""
    expected = promise(identity, method)
    unit = _unit(identity)
    if expected.byte is None:
        return Verification(None, unit, 0, 0, None, f"not checked: {expected.why}")
    count = -(-_size(identity) // unit)
    blocks = sample_blocks(count, samples, random.Random(seed))
    if not blocks:
        return Verification(expected.what, unit, 0, 0, None, "not checked: the target is empty")
    try:
        bad = [
            block
            for block, data in read(identity.path, unit, blocks)
            if not data or data.count(expected.byte) != len(data)
        ]
    except DeviceError as exc:
        raise PurgeError(f"read-back check of {identity.path}: {exc}") from None
    matching = len(blocks) - len(bad)
    if not bad:
        detail = (
            f"all {len(blocks)} sampled blocks of {unit} B read back as {expected.what} "
            f"({expected.why})"
        )
    else:
        detail = (
            f"{len(bad)} of {len(blocks)} sampled blocks of {unit} B do not read back as "
            f"{expected.what} (first: block {bad[0]}), though {expected.why}"
        )
    return Verification(expected.what, unit, len(blocks), matching, not bad, detail)
