"""What each purge promises to read back as, and which blocks the check samples."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.purge import PurgeMethod, promise, verify
from pytest_ssd.purge.verify import sample_blocks
from tests.fake_machine import FakeMachine
from tests.unit.purge_fakes import nvme_identity, nvme_info, sata_identity, sparse_target


@pytest.mark.parametrize(
    ("count", "samples", "expected_len"), [(2048, 64, 66), (10, 64, 10), (2, 64, 2), (1, 64, 1)]
)
def test_samples_hold_both_ends_and_distinct_blocks(
    count: int, samples: int, expected_len: int
) -> None:
    blocks = sample_blocks(count, samples, random.Random(7))
    assert len(blocks) == expected_len == len(set(blocks))
    assert blocks[0] == 0 and blocks[-1] == count - 1
    assert blocks == sorted(blocks)
    assert sample_blocks(0, samples, random.Random(7)) == []


def test_promises() -> None:
    loop = dataclasses.replace(nvme_identity(), transport="loop", kernel_name="loop0", nvme=None)
    assert promise(loop, PurgeMethod.DISCARD).byte == 0
    file = dataclasses.replace(loop, kind="file", transport="file")
    assert promise(file, PurgeMethod.PUNCH_HOLE).what == "zeroes"
    # an NVMe discard and an ATA erase promise nothing, whatever DLFEAT says
    assert promise(nvme_identity(), PurgeMethod.DISCARD).byte is None
    assert promise(sata_identity(), PurgeMethod.ATA_SECURE_ERASE).byte is None
    assert promise(nvme_identity(), PurgeMethod.SANITIZE_CRYPTO).byte == 0
    # DLFEAT bit 3 (deallocate in Write Zeroes) is no read-back value: only bits 2:0 count
    ones = nvme_identity(nvme=nvme_info(ns={"dlfeat": 0b1010}))
    assert promise(ones, PurgeMethod.FORMAT_SES2).byte == 0xFF


def test_empty_target_is_not_checked(tmp_path: Path) -> None:
    target = sparse_target(tmp_path, size=0)
    identity = dataclasses.replace(
        nvme_identity(target), kind="file", transport="file", physical_block_size=4096
    )
    check = verify(identity, PurgeMethod.PUNCH_HOLE, read=LOCAL.read_blocks)
    assert (check.ok, check.sampled, check.detail) == (None, 0, "not checked: the target is empty")


def test_blocks_and_globs_read_the_same_through_any_machine(tmp_path: Path) -> None:
    # the read-back and the sibling namespaces go through the device's machine: this one
    # reads in-process, another runs dd and a shell glob there (here: the same host)
    target = tmp_path / "target.img"
    target.write_bytes(b"".join(bytes([n]) * 4096 for n in range(8)))
    host = FakeMachine("lab7", here=True)
    here = list(LOCAL.read_blocks(str(target), 4096, [0, 3, 7]))
    there = list(host.read_blocks(str(target), 4096, [0, 3, 7]))
    assert here == there == [(b, bytes([b]) * 4096) for b in (0, 3, 7)]
    (tmp_path / "nvme0n1").mkdir()
    (tmp_path / "nvme0n2").mkdir()
    pattern = f"{tmp_path}/nvme*"
    assert (
        LOCAL.glob(pattern) == host.glob(pattern) == [f"{tmp_path}/nvme0n1", f"{tmp_path}/nvme0n2"]
    )
