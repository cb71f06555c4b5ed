"""A job's figures from fio's per-I/O logs (the batch's releases), bucketed as fio buckets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_ssd.errors import ParseError
from pytest_ssd.fio.iolog import (
    PLAT_NR,
    job_result,
    plat_idx_to_val,
    plat_indices,
    plat_val_to_idx,
    read_log,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "fio"


def test_small_latencies_are_their_own_bucket_and_larger_ones_the_buckets_middle() -> None:
    assert [plat_val_to_idx(v) for v in (0, 1, 127)] == [0, 1, 127]
    assert [plat_idx_to_val(i) for i in (0, 1, 127)] == [0, 1, 127]
    # 128 ns: the first group with one error bit, buckets of 2 ns; fio reports the middle
    assert plat_val_to_idx(128) == plat_val_to_idx(129) == 128
    assert plat_idx_to_val(128) == 129
    # 10 us: 7 error bits (buckets of 128 ns)
    index = plat_val_to_idx(10_000)
    assert plat_idx_to_val(index) - 64 <= 10_000 < plat_idx_to_val(index) + 64
    assert plat_val_to_idx(1 << 62) == PLAT_NR - 1, "the last bucket takes what is larger"


def test_the_vectorised_buckets_are_fios_at_every_power_of_two_and_between() -> None:
    edges = [v for k in range(63) for v in ((1 << k) - 1, 1 << k, (1 << k) + 1)]
    spread = np.random.default_rng(7).integers(0, 1 << 40, 10_000).tolist()
    values = edges + spread + [(1 << 63) - 1]
    got = plat_indices(np.array(values, dtype=np.int64)).tolist()
    assert got == [plat_val_to_idx(v) for v in values]


def test_a_log_that_stops_being_numbers_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "io-1_clat.1.log"
    path.write_text("0, 1000, 0, 4096, 0\n1, 12x, 0, 4096, 0\n")
    with pytest.raises(ParseError, match=r"io-1_clat\.1\.log: not a log of integers"):
        read_log(path)
    path.write_text("0, 1000, 0, 4096, 0\n1, 1200, 0, 4096\n")
    with pytest.raises(ParseError, match="lines of 5 values expected"):
        read_log(path)


def test_every_bin_fio_reported_is_a_bucket_value_of_ours() -> None:
    data = json.loads((GOLDEN / "randread_4k_qd32.json").read_text())
    bins = [int(v) for job in data["jobs"] for v in job["read"]["clat_ns"]["bins"]]
    assert len(bins) > 50
    assert all(plat_idx_to_val(plat_val_to_idx(value)) == value for value in bins)


def log(path: Path, rows: list[tuple[int, int, int, int]]) -> None:
    path.write_text("".join(f"{t}, {v}, {d}, {bs}, 0\n" for t, v, d, bs in rows))


def test_job_result_adds_up_the_logs_per_direction(tmp_path: Path) -> None:
    clat = [(0, 1000, 0, 4096), (3, 300, 1, 4096), (7, 5000, 0, 4096), (9, 200, 0, 4096)]
    log(tmp_path / "io-1_clat.1.log", clat)
    log(tmp_path / "io-1_lat.1.log", [(t, v + 100, d, bs) for t, v, d, bs in clat])
    log(tmp_path / "io-1_slat.1.log", [(t, 100, d, bs) for t, _, d, bs in clat])
    result = job_result("rnd", tmp_path / "io-1", {"bs": "4096"})
    read, write = result.directions["read"], result.directions["write"]
    assert (read.io_bytes, read.total_ios, write.io_bytes, write.total_ios) == (12288, 3, 4096, 1)
    # fio's run time: the elapsed microseconds rounded up to whole ms; the logs' last is 9 ms
    assert read.runtime_ms == write.runtime_ms == 10
    assert read.iops == pytest.approx(300.0) and read.bw_bytes_s == 12288 * 1000 // 10
    assert read.clat is not None and (read.clat.min_ns, read.clat.max_ns) == (200, 5000)
    assert read.clat.mean_ns == pytest.approx(6200 / 3)
    assert sum(count for _, count in read.clat.bins) == 3
    assert read.lat_mean_ns == pytest.approx(6500 / 3) and read.slat_mean_ns == pytest.approx(100.0)
    assert result.options == {"bs": "4096"}
    # a slat for every I/O: lat is slat + clat, and the lat log is not read at all
    (tmp_path / "io-1_lat.1.log").write_text("not numbers\n")
    assert (
        job_result("rnd", tmp_path / "io-1", {}).directions["read"].lat_mean_ns == read.lat_mean_ns
    )
    # a sync engine logs no slat: the lat log is fio's word
    (tmp_path / "io-1_slat.1.log").write_text("")
    with pytest.raises(ParseError, match="not a log of integers"):
        job_result("rnd", tmp_path / "io-1", {})


def test_a_job_without_logs_or_io_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="no clat log"):
        job_result("x", tmp_path / "io-1", {})
    for kind in ("clat", "lat", "slat"):
        (tmp_path / f"io-1_{kind}.1.log").write_text("")
    with pytest.raises(ParseError, match="no I/O"):
        job_result("x", tmp_path / "io-1", {})
