"""Qualification, sector sizes and namespaces: the device's block is the one it declares, and
the other namespaces of its controller are never written.

Each check is a ``qualification`` record of part ``namespaces`` (pass / fail / not judged,
one line); a failed check fails its test with that line (:mod:`pytest_ssd.methods.namespaces`).
What the plugin derives from the block size (fio's blocks, alignment, capacity) is checked
by running on a 4 KiB-sector device (tests/e2e/test_namespaces.py: a 4 KiB loop device,
and a 4 KiB second namespace of QEMU's controller whose first namespace is checksummed
before and after).  See docs/devices.md.
"""

from __future__ import annotations

from pytest_ssd import SsdBench
from pytest_ssd.methods.namespaces import run


def test_the_block_size_is_the_one_declared(ssd: SsdBench) -> None:
    """The kernel's logical block is the LBA format the namespace says is in use (id-ns)."""
    run.block_size(ssd)


def test_other_namespaces_are_not_written(ssd: SsdBench) -> None:
    """Random writes of one logical block on the device move no write counter of another
    namespace of its controller."""
    run.other_namespaces(ssd)
