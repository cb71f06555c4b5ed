"""Whether a datasheet describes the device under test.

Model and firmware are compared with the datasheet's globs (case-insensitive,
runs of spaces folded); the capacity matches when the device's size is within
:data:`CAPACITY_SLACK` of the sold capacity — drives expose a little more than
the label says (IDEMA: a "1 TB" drive holds 1,000,204,886,016 bytes).
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from pytest_ssd.device.identity import DeviceIdentity, decimal_size
from pytest_ssd.errors import DatasheetError
from pytest_ssd.specs.model import Datasheet

#: relative difference allowed between the device's size and the sold capacity
CAPACITY_SLACK = 0.01


def _fold(text: str) -> str:
    return " ".join(text.split()).lower()


def _matches(value: str, globs: Iterable[str]) -> bool:
    return any(fnmatchcase(_fold(value), _fold(glob)) for glob in globs)


def _holds(size_bytes: int, capacity_gb: float) -> bool:
    """Whether a device of *size_bytes* is sold as *capacity_gb* (decimal GB)."""
    nominal = capacity_gb * 1e9
    return abs(size_bytes - nominal) <= CAPACITY_SLACK * nominal


def mismatch(datasheet: Datasheet, identity: DeviceIdentity) -> str | None:
    """Why *datasheet* does not describe *identity*, or None when it does."""
    drive = datasheet.drive
    if identity.model is None or not _matches(identity.model, drive.models):
        return f"model {identity.model or 'unknown'!r} is not {' or '.join(drive.models)}"
    if not any(_holds(identity.size_bytes, gb) for gb in drive.capacities_gb):
        sold = " or ".join(f"{gb:g}" for gb in drive.capacities_gb)
        return f"capacity {decimal_size(identity.size_bytes)} is not {sold} GB"
    if drive.firmware and (
        identity.firmware is None or not _matches(identity.firmware, drive.firmware)
    ):
        return f"firmware {identity.firmware or 'unknown'!r} is not {' or '.join(drive.firmware)}"
    return None


def require_match(datasheet: Datasheet, identity: DeviceIdentity, *, force: bool = False) -> None:
    """Raise :class:`DatasheetError` unless *datasheet* describes *identity* (or *force*)."""
    reason = mismatch(datasheet, identity)
    if reason and not force:
        raise DatasheetError(
            datasheet.path,
            "drive",
            f"{datasheet.drive.name} does not match {identity.path}: {reason} "
            "(add --datasheet-force to use it anyway)",
        )


def select(datasheets: Iterable[Datasheet], identity: DeviceIdentity) -> Datasheet | None:
    """The first of *datasheets* that describes *identity*, or None."""
    return next((d for d in datasheets if mismatch(d, identity) is None), None)
