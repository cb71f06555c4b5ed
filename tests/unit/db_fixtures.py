"""Runs written straight into a results database, without fio: for db, report and CLI tests.

Also what storage faults need: a damaged page, a foreign SQLite file, a small tmpfs.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import RunWriter, TestRecords, schema
from pytest_ssd.db.arrays import pack
from pytest_ssd.results.record import Measurement, SeriesRecord

CORNERS = (
    ("seq-read", "seq", 131072, 100),
    ("seq-write", "seq", 131072, 0),
    ("rnd-read", "rnd", 4096, 100),
    ("rnd-write", "rnd", 4096, 0),
)


def metrics(iops: float, bs: int, samples: int = 100_000) -> dict[str, Any]:
    """One direction as results.json holds it; p99.999 needs 100,000 samples to resolve."""
    ps = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)
    percentiles = [
        {"p": p, "us": 100.0 * (i + 1), "resolved": samples * (1 - p / 100) >= 1}
        for i, p in enumerate(ps)
    ]
    return {
        "iops": iops,
        "bw_mib_s": iops * bs / 2**20,
        "bw_mb_s": iops * bs / 1e6,
        "io_bytes": int(iops * bs * 3),
        "total_ios": int(iops * 3),
        "runtime_s": 3.0,
        "lat_mean_us": 80.0,
        "clat": {
            "samples": samples,
            "min_us": 10.0,
            "max_us": 900.0,
            "mean_us": 80.0,
            "stddev_us": 5.0,
            "percentiles": percentiles,
        },
    }


def corner(dut: str, shape: tuple[str, str, int, int], iops: float) -> Measurement:
    name, pattern, bs, read_pct = shape
    direction = "read" if read_pct == 100 else "write"
    workload = {
        "name": name,
        "pattern": pattern,
        "block_size": bs,
        "iodepth": 32,
        "numjobs": 1,
        "read_pct": read_pct,
        "ioengine": "libaio",
        "direct": True,
        "fsync": 0,
        "label": name,
    }
    return Measurement(
        test=f"suites/smoke/test_corners.py::test_four_corners[{dut}-{name}]",
        device=dut,
        name=name,
        workload=workload,
        metrics={direction: metrics(iops, bs)},
        start="2026-11-23T10:00:00.000+00:00",
        end="2026-11-23T10:00:03.000+00:00",
        artifacts="artifacts/x",
    )


def description(dut: str, label: str, serial: str | None = None) -> dict[str, Any]:
    identity = {
        "path": f"/dev/{dut}",
        "model": "Test SSD" if serial else None,
        "serial": serial,
        "firmware": "1.0" if serial else None,
        "size_bytes": 2**31,
        "transport": "loop",
        "logical_block_size": 512,
        "physical_block_size": 512,
    }
    return {
        "id": dut,
        "path": f"/dev/{dut}",
        "scratch": serial is None,
        "note": "test device",
        "identity": identity,
        "label": label,
        "summary_tables": None,
    }


def write_run(
    db: Path | str,
    run_id: str,
    label: str,
    scale: float = 1.0,
    *,
    finish: bool = True,
    dut: str = "d0",
) -> RunWriter:
    """A smoke run of one drive with its four corners (IOPS x *scale*) and a series."""
    run_dir = db.parent / run_id if isinstance(db, Path) else Path("/nonexistent") / run_id
    writer = RunWriter(db, run_id, run_dir, {"host": "lab", "kernel": "Linux 6"})
    writer.add_device(dut, description(dut, label), label)
    for number, shape in enumerate(CORNERS):
        name = shape[0]
        m = corner(dut, shape, 1000.0 * (number + 1) * scale)
        blob = pack({"ns": [1000, 2000], "count": [5, 1]})
        series = (
            SeriesRecord(device=dut, name=f"{name}.clat-x", meta={"unit": "ns"}, file=""),
            blob,
        )
        writer.add(TestRecords(m.test, measurements=[m], series=[series]))
        writer.test_done(m.test, "passed", 3.0, None)
    if finish:
        writer.finish({"passed": len(CORNERS)}, complete=True)
    return writer


def corrupt_page(db: Path, table: str) -> None:
    """Overwrite the root page of *table* with garbage (the database closed, its WAL merged)."""
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    conn.close()
    assert not db.with_name(db.name + "-wal").exists(), "the WAL holds pages: close every writer"
    with db.open("r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\xff" * page_size)


def foreign_db(path: Path, *, wal: bool = False) -> str:
    """A user's own SQLite file (a table of notes, no pytest-ssd marks); its SHA-256."""
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    conn.executemany("INSERT INTO notes (text) VALUES (?)", [("keep me",), ("and me",)])
    conn.commit()
    conn.close()
    return sha256(path)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    """A small tmpfs at *mountpoint* (root only): a filesystem to fill, or to make read-only.

    ``size`` as mount takes it (``"64k"``); unmounted on the way out, also on failure.
    """
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mountpoint.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mountpoint))
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False, timeout=60)


def remount(mountpoint: Path, options: str) -> None:
    """Remount a tmpfs of :func:`tmpfs` with new options (``ro``, ``size=1m``)."""
    _mount("-o", f"remount,{options}", str(mountpoint))


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, timeout=60)


#: (column, table) each migration after the first added, by the version it brought
_ADDED = {
    6: [("build", "run_devices")],
    5: [(column, "measurements") for column in ("series_key", "firmware", "serial")],
    4: [("seq", table) for table in schema.SEQ_TABLES],
    3: [("host", "run_devices")],
    2: [("suite", "tests")],
}


def as_older(db: Path, version: int) -> None:
    """Turn the (closed) database at *db* into one of schema *version*: an older pytest-ssd's
    (the columns later migrations added dropped), or a newer one's (``user_version`` only)."""
    conn = sqlite3.connect(db)
    for number, added in _ADDED.items():
        for column, table in added if number > version else ():
            conn.execute(f"DROP INDEX IF EXISTS {table}_{column}")
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    if version < 5:
        conn.execute("DROP TABLE series_keys")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
