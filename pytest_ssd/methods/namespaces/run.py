"""The namespace checks on the ``ssd`` fixture, each a ``qualification`` record (part
``namespaces``, pass / fail / not judged, one line); a failed check fails its test with
that line."""

from __future__ import annotations

import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.device.udev import namespaces
from pytest_ssd.fio.job import FioJob
from pytest_ssd.methods.namespaces import PART

#: the span the write check writes: small, at the start of the device
SPAN = 16 << 20


def _judged(ssd: SsdBench, check: str, verdict: str, detail: str) -> None:
    """Record the check (the shared contract); a failed one fails the test with its line."""
    values = {"part": PART, "check": check, "verdict": verdict, "detail": detail}
    ssd.derive("qualification", values)
    if verdict == "fail":
        pytest.fail(detail, pytrace=False)


def block_size(ssd: SsdBench) -> None:
    """The kernel's logical block is the LBA format the namespace says is in use (id-ns)."""
    identity = ssd.dut.identity
    lba = identity.logical_block_size
    namespace = identity.nvme.namespace if identity.nvme else None
    if namespace is None:
        detail = f"{identity.path} declares no LBA format (no nvme id-ns): the kernel's {lba} B"
        _judged(ssd, "block size", "not judged", f"{detail} logical block is taken as is")
        return
    used = f"LBA format #{namespace.lba_format_index} ({namespace.lba_size} B)"
    if namespace.lba_size != lba:
        _judged(ssd, "block size", "fail", f"id-ns has {used} in use, the kernel {lba} B")
    _judged(ssd, "block size", "pass", f"{used} in use, the kernel's logical block")


def other_namespaces(ssd: SsdBench) -> None:
    """Random writes of one logical block on the device move no write counter of another
    namespace of its controller."""
    identity = ssd.dut.identity
    lba = identity.logical_block_size
    name = identity.kernel_name or ""
    others = namespaces.others(ssd.machine, name)
    before = namespaces.written(ssd.machine, others)
    span = min(SPAN, identity.size_bytes)
    job = FioJob("ns-writes", "rnd", lba, iodepth=4, read_pct=0, size=span, io_bytes=span // 4)
    done = ssd.run(job).directions["write"]
    assert done.io_bytes > 0 and done.io_bytes % lba == 0, "whole logical blocks written"
    if not others:
        why = (
            "is no NVMe namespace"
            if namespaces.NAMESPACE.fullmatch(name) is None
            else ("is the only namespace of its controller")
        )
        _judged(ssd, "other namespaces untouched", "not judged", f"{name or identity.path} {why}")
        return
    moved = namespaces.changes(before, namespaces.written(ssd.machine, others))
    if moved:
        _judged(ssd, "other namespaces untouched", "fail", f"written to: {'; '.join(moved)}")
    wrote = f"{done.io_bytes // lba:,} writes of {lba} B on {name}"
    _judged(ssd, "other namespaces untouched", "pass", f"{wrote}; {', '.join(others)}: none")
