"""The device pinned at lock time: another device behind the same name or number is told apart."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.pinned import DeviceChanged, Pinned

DRIVE = DeviceIdentity(
    path="/dev/sdb",
    kind="block",
    kernel_name="sdb",
    size_bytes=960 * 10**9,
    logical_block_size=512,
    physical_block_size=4096,
    rotational=False,
    discard=True,
    model="SAMSUNG MZ7LH960",
    serial="S45NNA0M123456",
    firmware="HXT7404Q",
    transport="sata",
)
KEY = ("block", 8, 16)


def _refused(pinned: Pinned, now: Pinned) -> str:
    with pytest.raises(DeviceChanged) as raised:
        pinned.check("/dev/sdb", now)
    return str(raised.value)


def test_the_same_drive_passes() -> None:
    pinned = Pinned.of(KEY, DRIVE)
    pinned.check("/dev/sdb", Pinned.of(KEY, dataclasses.replace(DRIVE, firmware="other")))


def test_the_same_number_on_another_drive_stops() -> None:
    """A drive dropped off the bus; the next disk found took its sdX and its number."""
    other = dataclasses.replace(DRIVE, serial="S45NNA0M999999")
    message = _refused(Pinned.of(KEY, DRIVE), Pinned.of(KEY, other))
    assert message == (
        "refusing to write to /dev/sdb: it is no longer the device identified, confirmed and"
        " locked (its serial is 'S45NNA0M999999' now, 'S45NNA0M123456' when it was locked);"
        " nothing more is written to it"
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"size_bytes": 10**12}, "its size bytes is 1000000000000 now"),
        ({"model": "OTHER"}, "its model is 'OTHER' now"),
        ({"backing_file": "/tmp/other.img"}, "its backing file is '/tmp/other.img' now"),
    ],
)
def test_any_other_identity_stops(change: dict[str, object], said: str) -> None:
    now = Pinned.of(KEY, dataclasses.replace(DRIVE, **change))  # type: ignore[arg-type]
    assert said in _refused(Pinned.of(KEY, DRIVE), now)


def test_another_number_stops() -> None:
    message = _refused(Pinned.of(KEY, DRIVE), Pinned.of(("block", 8, 32), DRIVE))
    assert "(it is device number 8:32 now, device number 8:16 when it was locked)" in message


def test_a_device_that_cannot_be_read_stops() -> None:
    with pytest.raises(DeviceChanged, match=r"\(it cannot be identified: gone\)"):
        Pinned.of(KEY, DRIVE).check("/dev/sdb", None, "it cannot be identified: gone")


def test_it_travels_to_workers_unchanged() -> None:
    pinned = Pinned.of(KEY, DRIVE)
    assert Pinned.from_dict(pinned.as_dict()) == pinned
