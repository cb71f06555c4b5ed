"""--dut values: scratch, paths, sizes."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_ssd.device.dut import DEFAULT_SCRATCH_SIZE, DutSpec, dut_spec, parse_size
from pytest_ssd.site.dut import Dut
from tests.unit.purge_fakes import nvme_identity


@pytest.mark.parametrize(
    ("text", "size"),
    [("4096", 4096), ("512M", 512 << 20), ("2G", 2 << 30), ("1GiB", 1 << 30), ("3t", 3 << 40)],
)
def test_sizes_are_binary(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_scratch_defaults_and_sizes() -> None:
    assert dut_spec("scratch").scratch_size == DEFAULT_SCRATCH_SIZE
    assert dut_spec("scratch:1G").scratch_size == 1 << 30
    assert dut_spec("scratch:1G").is_scratch
    spec = dut_spec("/dev/loop3")
    assert spec == DutSpec(raw="/dev/loop3", path=Path("/dev/loop3"))
    assert not spec.is_scratch


@pytest.mark.parametrize(
    ("text", "message"), [("scratch:lots", "not a size"), ("scratch:1M", "at least"), ("", "needs")]
)
def test_bad_values_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        dut_spec(text)


@pytest.mark.parametrize(
    ("builds", "index", "firmware", "build"),
    [
        (("A",), 1, "7.2.22", "A"),  # once: every device's
        (("A", "B"), 1, "7.2.22", "B"),  # once per --dut, in order
        ((), 0, "7.2.22", "7.2.22"),  # none given: the firmware the drive reports (id-ctrl's)
        ((), 0, None, None),  # a loop device, a file: none, never invented
    ],
)
def test_a_devices_build_is_the_option_else_its_firmware_else_none(
    builds: tuple[str, ...], index: int, firmware: str | None, build: str | None
) -> None:
    dut = Dut(
        id="d",
        path=Path("/dev/nvme0n1"),
        identity=nvme_identity(firmware=firmware),
        scratch=False,
        readonly=True,
    )
    dut.name_build(builds, index)
    assert dut.build == build and dut.describe()["build"] == build
