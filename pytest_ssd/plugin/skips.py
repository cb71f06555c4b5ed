"""Tests a device cannot take, known before their state is reached: skipped, and out of the plan.

A test whose ``ssd_applies`` classes leave the drive out, or whose blocks the
device's logical block size refuses (``ssd_block_size``, a point's
``ssd_workload``, a datasheet line's block size), is skipped by the ``dut``
fixture with the reason, before the ``ssd`` fixture purges or preconditions
anything for it; the plan printed at the start leaves it out as well.
"""

from __future__ import annotations

import pytest

from pytest_ssd.device.drive_class import DriveClass, item_skip_reason
from pytest_ssd.errors import ConfigError
from pytest_ssd.plugin.points import WORKLOAD_MARKER
from pytest_ssd.workloads.limits import Limits

BLOCK_MARKER = "ssd_block_size"
BLOCK_HELP = (
    f"{BLOCK_MARKER}(bytes): the test sends I/O of this block size; on a device whose logical"
    " block refuses it, it is skipped with the reason before its state is reached"
)


def _size(item: pytest.Item, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(
            f"{item.nodeid}: @pytest.mark.{BLOCK_MARKER} takes a block size in bytes, not {value!r}"
        )
    return value


def block_sizes(item: pytest.Item) -> list[int]:
    """The block sizes *item* declares (``ssd_block_size``, ``ssd_workload``'s block_size)."""
    sizes = [_size(item, v) for m in item.iter_markers(BLOCK_MARKER) for v in m.args]
    sizes += [
        _size(item, m.kwargs["block_size"])
        for m in item.iter_markers(WORKLOAD_MARKER)
        if "block_size" in m.kwargs
    ]
    return sizes


def block_skip_reason(item: pytest.Item, lba_size: int) -> str | None:
    """Why the device's logical block size refuses *item*'s blocks (None: it takes them)."""
    limits = Limits(lba_size)
    reasons = (limits.skip_block(size) for size in sorted(block_sizes(item)))
    return next((r for r in reasons if r is not None), None)


def skip_before_state(item: pytest.Item, drive: DriveClass | None, lba_size: int) -> str | None:
    """Why *item* does not run on this device, known before its state is reached."""
    return item_skip_reason(item, drive) or block_skip_reason(item, lba_size)
