"""The CSV exports as a lab reads them: pandas, every number column numeric, no JSON cells.

The measurements CSV had no device-state, workload or repeat column and named percentiles
``p99_9_us`` (the report ``p99.9``, the junit file ``p99.9_us``); a derived record was one
JSON cell.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from pandas.api.types import is_numeric_dtype

from pytest_ssd.cli import main
from pytest_ssd.db import RunWriter, TestRecords
from pytest_ssd.results.record import Derived, Measurement
from pytest_ssd.results.transition import Transition
from tests.unit.db_fixtures import CORNERS, corner, write_run

NUMERIC = (
    "repeat",
    "block_size_bytes",
    "iodepth",
    "numjobs",
    "read_pct",
    "iops",
    "bw_mib_s",
    "bw_mb_s",
    "io_bytes",
    "runtime_s",
    "lat_mean_us",
    "clat_min_us",
    "clat_max_us",
    "clat_samples",
    "p50_us",
    "p90_us",
    "p99_us",
    "p99.9_us",
    "p99.99_us",
    "p99.999_us",
    "start_unix_s",
    "end_unix_s",
)


def _at(m: Measurement, when: str, repeat: int | None = None) -> Measurement:
    workload = m.workload if repeat is None else {**m.workload, "repeat": repeat}
    return dataclasses.replace(m, start=when, end=when, workload=workload)


def _transition(test: str, target: str, start: str) -> Transition:
    return Transition(
        device="d0",
        test=test,
        source=None,
        target=target,
        reason="needed",
        steps=[],
        start=start,
        end=start,
        seconds=1.0,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A run whose drive went FOB then cssd-1, a workload repeated 3 times, a derived record."""
    path = tmp_path / "results.sqlite"
    writer: RunWriter = write_run(path, "run-1", "drive A", finish=False)  # corners: no state
    test = "suites/csd/test_x.py::test_x[d0]"
    fob = _transition(test, "fob", "2026-11-23T11:00:00.000+00:00")
    cssd = _transition(test, "cssd-1", "2026-11-23T12:00:00.000+00:00")
    rnd = corner("d0", CORNERS[2], 5000.0)
    runs = [_at(rnd, f"2026-11-23T11:0{k}:00.000+00:00", repeat=k + 1) for k in range(3)]
    later = _at(corner("d0", CORNERS[0], 900.0), "2026-11-23T12:30:00.000+00:00")
    values = {"window": [{"iops": 5.0, "ok": True}], "verdict": "reached", "mean": None}
    derived = Derived(test=test, device="d0", name="snia-iops", values=values)
    writer.add(TestRecords(test, transitions=[fob], measurements=runs))
    writer.add(TestRecords(test, transitions=[cssd], measurements=[later], derived=[derived]))
    writer.finish({"passed": 5}, complete=True)
    return path


def test_pandas_reads_the_measurements_with_numbers_numeric(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    assert main(["--db", str(db), "export", "--format", "csv", "-o", str(out)]) == 0
    frame = pd.read_csv(out)
    assert [c for c in NUMERIC if not is_numeric_dtype(frame[c])] == []
    assert not [c for c in frame.columns if c.startswith("p") and "_9" in c], "p99.9, not p99_9"
    assert not frame.map(lambda cell: isinstance(cell, str) and cell.startswith("{")).any().any()
    # the state each was measured in, its workload, which run of a repeat
    rows = frame.set_index(["name", "repeat", "start"])
    assert list(frame["state"].fillna("")[:4]) == [""] * 4, "the corners: before any transition"
    repeated = frame[frame["start"].str.startswith("2026-11-23T11:0")]
    assert list(repeated["repeat"]) == [1, 2, 3] and set(repeated["state"]) == {"fob"}
    assert set(repeated["workload"]) == {"rnd-read"}
    last = frame[frame["start"] == "2026-11-23T12:30:00.000+00:00"].iloc[0]
    assert last["state"] == "cssd-1" and last["repeat"] == 1
    assert last["p99.9_us"] == 400.0 and last["block_size_bytes"] == 131072
    assert len(rows) == len(frame) == len(CORNERS) + 4
    # the drive as a lab names it: its host (here the controller's), model, serial, firmware
    assert set(frame["host"]) == {"lab"} and {"model", "serial", "firmware"} <= set(frame)
    assert last["start_unix_s"] == 1795437000.0, "2026-11-23T12:30Z as a number to plot"
    # one run's rows, its states too
    argv = ["--db", str(db), "export", "--format", "csv", "--run", "run-1", "-o", str(out)]
    assert main(argv) == 0
    assert list(pd.read_csv(out)["state"].fillna("")) == list(frame["state"].fillna(""))


def test_a_derived_record_is_a_row_per_value(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "d.csv"
    argv = ["--db", str(db), "export", "--table", "derived", "--format", "csv", "-o", str(out)]
    assert main(argv) == 0
    frame = pd.read_csv(out)
    assert is_numeric_dtype(frame["value"])
    values = dict(zip(frame["key"], zip(frame["value"], frame["text"], strict=True), strict=True))
    assert values["window.0.iops"][0] == 5.0
    assert values["window.0.ok"][1] == "true" and values["verdict"][1] == "reached"
    assert pd.isna(values["mean"][0]) and pd.isna(values["mean"][1])
