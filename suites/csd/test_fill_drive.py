"""Fill drive and speed profile (METHOD §4.2 and §8; seed 000 "Fill Drive", seed 002).

``test_fill_drive`` starts from a purged device: a SEQ 128 KiB QD256 write of
100 % of the span logged every 100 ms, the idle gap, a second pass; it leaves the
device ``filled``.  Bandwidth against data written shows the SLC cache, whose
size the cache rule estimates (:class:`pytest_ssd.analysis.CacheRule`).  The
speed profile (speed per quantum) comes from the same logs.

Each pass's logs are kept as a series named after its job (``fill-pass-1``,
``fill-pass-2``, ``speed-read``; :func:`pytest_ssd.report.fill.series_of`), so
the results database can compare drives' curves long after the run.

``test_speed_profile_read`` reads the filled span once with fio, shaped like dd
(1 MiB, one ``pread`` at a time, direct I/O), and once with dd, the independent
reader (seed 002 validated its tool against ``cp``).  Both numbers and their
ratio are recorded; they must agree within the factor that
:class:`pytest_ssd.workloads.fill.Agreement` justifies (1.5 on a drive, 4 on a
scratch loop device, whose speed jumps between reads).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from pytest_ssd import SsdBench
from pytest_ssd.analysis import (
    CacheEstimate,
    FillPass,
    SelfCheck,
    SpeedProfile,
    estimate_cache,
    fill_pass,
    log_path,
    parse_dd,
    read_log,
    speed_profile,
)
from pytest_ssd.device.drive_class import ALL_CLASSES, APPLIES_MARKER
from pytest_ssd.fio.engine import FioRun
from pytest_ssd.fio.job import FioJob
from pytest_ssd.proc import run, which
from pytest_ssd.report import fill as graphs
from pytest_ssd.workloads.csd import FILL_DRIVE_STATE
from pytest_ssd.workloads.fill import (
    SELF_CHECK,
    FillTiming,
    dd_argv,
    fill_job,
    idle_gap_s,
    read_job,
    timing,
)

pytestmark = getattr(pytest.mark, APPLIES_MARKER)(*ALL_CLASSES)  # csd applies to every class

MiB, GiB = 1 << 20, 1 << 30
COREUTILS = "install coreutils"
#: seconds dd gets beyond ten times fio's read of the same span
DD_TIMEOUT_MARGIN_S = 60.0
#: how far the integral of a bandwidth log may miss fio's byte count, a factor either way
LOG_FACTOR = 1.5


def logged(fio_run: FioRun, job: FioJob, name: str, direction: str) -> FillPass:
    """A pass from the run's bandwidth and latency logs and fio's totals."""
    done = fio_run.result(job).directions[direction]
    bw = read_log(log_path(fio_run.artifacts, job.name, "bw"))
    lat = read_log(log_path(fio_run.artifacts, job.name, "lat"))
    return fill_pass(name, bw, lat, done.io_bytes, done.runtime_ms / 1000, direction=direction)


def keep(ssd: SsdBench, name: str, one: FillPass, direction: str) -> None:
    """Store the pass's logs with the results (the cross-drive comparison draws them)."""
    meta, arrays = graphs.series_of(one, direction)
    ssd.series(name, meta, **arrays)


def check_log(one: FillPass, row: FillTiming) -> None:
    """The log is in the units assumed and adds up to fio's bytes, give or take.

    Give or take a lot on a loaded VM: a stalled start made a quick pass's log add
    up to 114.7 % (see pytest_ssd.analysis.fill).  A unit slip is off by 1024.
    """
    assert one.t_s[-1] <= one.runtime_s + row.log_ms / 1000, "the log ends with the job"
    assert np.all(one.bw >= 0) and np.all(one.lat_ns > 0)
    assert 1 / LOG_FACTOR <= one.coverage <= LOG_FACTOR, (
        f"{one.name}: the log accounts for {one.coverage:.1%} of fio's {one.io_bytes} bytes"
    )


def profile_of(one: FillPass, row: FillTiming) -> SpeedProfile:
    profile = speed_profile(one.t_s, one.written, row.quantum)
    assert profile.samples == int(one.written[-1] // row.quantum)
    assert np.all(profile.dt_s > 0)
    # the quanta's running mean is the log's mean, which is fio's as far as the log adds up
    ratio = float(profile.running_mean[-1]) / one.mean_bw
    assert 1 / LOG_FACTOR <= ratio <= LOG_FACTOR, f"{one.name}: log mean / fio mean {ratio:.2f}"
    return profile


def speed_values(series: list[tuple[str, SpeedProfile]], row: FillTiming) -> dict[str, object]:
    values: dict[str, object] = {"quantum_mib": row.quantum / MiB, "moving_n": row.moving_n}
    for name, profile in series:
        key = name.replace(" ", "")
        values[key] = profile.summary(row.sustained_pct)
        values[f"{key}_sustained_mib_s"] = profile.sustained(row.sustained_pct).bw / MiB
    return values


def pass_values(passes: list[FillPass], caches: list[CacheEstimate]) -> dict[str, object]:
    values: dict[str, object] = {}
    for number, (one, cache) in enumerate(zip(passes, caches, strict=True), start=1):
        values[f"pass{number}_mib_s"] = one.mean_bw / MiB
        values[f"pass{number}_s"] = one.runtime_s
        values[f"pass{number}_log_coverage"] = one.coverage
        values.update({f"pass{number}_{k}": v for k, v in cache.as_dict().items()})
    return values


@FILL_DRIVE_STATE
def test_fill_drive(ssd: SsdBench) -> None:
    row = timing(ssd.profile)
    span = ssd.region("device").size
    gap = idle_gap_s(ssd.profile)
    passes: list[FillPass] = []
    runs: list[FioRun] = []
    temperatures: list[dict[str, Any] | None] = []
    for number in range(1, row.passes + 1):
        if number > 1:
            time.sleep(gap)
        job = fill_job(number, span, row)
        runs.append(ssd.run(job))
        health = ssd.health
        temperatures.append(health.arrays() if health and health.samples else None)
        result = runs[-1].result(job)
        assert set(result.directions) == {"write"}
        assert result.directions["write"].io_bytes == job.size, "a pass writes 100 % of the span"
        passes.append(logged(runs[-1], job, f"pass {number}", "write"))
        check_log(passes[-1], row)
        keep(ssd, job.name, passes[-1], "write")

    caches = [estimate_cache(one, row.cache) for one in passes]
    for cache in caches:
        if cache.cache_bytes is not None:
            assert 0 <= cache.cache_bytes <= span and cache.post_bw is not None
    writes = [r.result(f"fill-pass-{n}").directions["write"] for n, r in enumerate(runs, 1)]
    ios = sum(w.total_ios for w in writes)
    lat_mean = sum((w.lat_mean_ns or 0.0) * w.total_ios for w in writes) / ios
    windows = np.concatenate([one.lat_ns for one in passes])
    assert windows.min() <= lat_mean <= windows.max(), "fio's mean lies among the window means"
    ssd.derive("fill", {
        **pass_values(passes, caches),
        "span_gib": span / GiB,
        "idle_gap_s": gap,
        "idle_gap_measured_s": runs[1].started - runs[0].ended,
        "log_interval_ms": row.log_ms,
        "lat_mean_ms": lat_mean / 1e6,
        "lat_max_window_ms": float(windows.max()) / 1e6,
        "clat_max_ms": max(w.clat.max_ns for w in writes if w.clat) / 1e6,
    })  # fmt: skip

    series = [(one.name, profile_of(one, row)) for one in passes]
    ssd.derive("fill-speed", speed_values(series, row))
    ssd.figure(graphs.bw_vs_written(passes, caches), "fill bandwidth vs written")
    ssd.figure(graphs.bw_vs_time(passes, temperatures), "fill bandwidth vs time")
    ssd.figure(graphs.latency_vs_time(passes, gap), "fill latency vs time")
    ssd.figure(graphs.mean_bars(passes), "fill mean bandwidth")
    ssd.figure(graphs.speed_per_quantum(series, row.moving_n), "fill speed profile")
    ssd.figure(graphs.speed_histogram(series, row.sustained_pct), "fill speed histogram")


@pytest.mark.dut_state("filled", phase=2)
def test_speed_profile_read(ssd: SsdBench) -> None:
    row = timing(ssd.profile)
    span = ssd.region("device").size
    job = read_job(span, row)
    fio_run = ssd.run(job)
    read = fio_run.result(job).directions["read"]
    assert read.io_bytes == job.size, "fio read the whole span"
    one = logged(fio_run, job, "read", "read")
    check_log(one, row)
    keep(ssd, job.name, one, "read")
    profile = profile_of(one, row)

    argv = dd_argv(which("env", COREUTILS), which("dd", COREUTILS), ssd.dut.path, span, row)
    timeout = DD_TIMEOUT_MARGIN_S + 10 * read.runtime_ms / 1000
    done = run(argv, timeout=timeout, artifacts=ssd.artifacts / "dd", name="dd").check("dd")
    dd_bytes, dd_s = parse_dd(done.stderr)
    assert dd_bytes == job.size, "dd read the same span"
    check = SelfCheck(read.bw_bytes_s, dd_bytes / dd_s, "dd")
    factor = SELF_CHECK.factor(ssd.dut.scratch)

    series = [("read", profile)]
    ssd.derive("speed-read", {
        **speed_values(series, row),
        "read_s": one.runtime_s,
        "log_mean_mib_s": float(profile.running_mean[-1]) / MiB,
        "dd_s": dd_s,
        **check.as_dict(),
        "tolerance_factor": factor,
    })  # fmt: skip
    ssd.figure(graphs.speed_per_quantum(series, row.moving_n), "read speed profile")
    ssd.figure(graphs.speed_histogram(series, row.sustained_pct), "read speed histogram")
    assert check.agrees(factor), (
        f"dd read {check.reader_bw / MiB:,.0f} MiB/s, fio {check.plugin_bw / MiB:,.0f} MiB/s: "
        f"ratio {check.ratio:.2f} is beyond a factor of {factor:g}"
    )
