"""Runs written straight into a results database, without fio: for db, report and CLI tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_ssd.db import RunWriter, TestRecords
from pytest_ssd.db.arrays import pack
from pytest_ssd.results.record import Measurement

CORNERS = (("seq-read", "seq", 131072, 100), ("seq-write", "seq", 131072, 0),
           ("rnd-read", "rnd", 4096, 100), ("rnd-write", "rnd", 4096, 0))  # fmt: skip


def metrics(iops: float, bs: int, samples: int = 100_000) -> dict[str, Any]:
    """One direction as results.json holds it; p99.999 needs 100,000 samples to resolve."""
    ps = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)
    percentiles = [
        {"p": p, "us": 100.0 * (i + 1), "resolved": samples * (1 - p / 100) >= 1}
        for i, p in enumerate(ps)
    ]
    return {
        "iops": iops, "bw_mib_s": iops * bs / 2**20, "bw_mb_s": iops * bs / 1e6,
        "io_bytes": int(iops * bs * 3), "total_ios": int(iops * 3), "runtime_s": 3.0,
        "lat_mean_us": 80.0,
        "clat": {"samples": samples, "min_us": 10.0, "max_us": 900.0, "mean_us": 80.0,
                 "stddev_us": 5.0, "percentiles": percentiles},
    }  # fmt: skip


def corner(dut: str, shape: tuple[str, str, int, int], iops: float) -> Measurement:
    name, pattern, bs, read_pct = shape
    direction = "read" if read_pct == 100 else "write"
    workload = {"name": name, "pattern": pattern, "block_size": bs, "iodepth": 32,
                "numjobs": 1, "read_pct": read_pct, "ioengine": "libaio", "direct": True,
                "fsync": 0, "label": name}  # fmt: skip
    return Measurement(
        test=f"suites/smoke/test_corners.py::test_four_corners[{dut}-{name}]", device=dut,
        name=name, workload=workload, metrics={direction: metrics(iops, bs)},
        start="2026-11-23T10:00:00.000+00:00", end="2026-11-23T10:00:03.000+00:00",
        artifacts="artifacts/x",
    )  # fmt: skip


def description(dut: str, label: str, serial: str | None = None) -> dict[str, Any]:
    identity = {"path": f"/dev/{dut}", "model": "Test SSD" if serial else None, "serial": serial,
                "firmware": "1.0" if serial else None, "size_bytes": 2**31, "transport": "loop",
                "logical_block_size": 512, "physical_block_size": 512}  # fmt: skip
    return {"id": dut, "path": f"/dev/{dut}", "scratch": serial is None, "note": "test device",
            "identity": identity, "label": label, "summary_tables": None}  # fmt: skip


def write_run(
    db: Path, run_id: str, label: str, scale: float = 1.0, *, finish: bool = True, dut: str = "d0"
) -> RunWriter:
    """A smoke run of one drive with its four corners (IOPS x *scale*) and a series."""
    writer = RunWriter(db, run_id, db.parent / run_id, {"host": "lab", "kernel": "Linux 6"})
    writer.add_device(dut, description(dut, label), label)
    for number, shape in enumerate(CORNERS):
        name = shape[0]
        m = corner(dut, shape, 1000.0 * (number + 1) * scale)
        blob = pack({"ns": [1000, 2000], "count": [5, 1]})
        series = {"device": dut, "name": f"{name}.clat-x", "meta": {"unit": "ns"}, "blob": blob}
        writer.add(TestRecords(m.test, measurements=[m], series=[series]))
        writer.test_done(m.test, "passed", 3.0, None)
    if finish:
        writer.finish({"passed": len(CORNERS)}, complete=True)
    return writer
