"""Fill drive and speed profile (METHOD §4.2 and §8; seed 000 "Fill Drive", seed 002).

``test_fill_drive`` starts from a purged device: a SEQ 128 KiB QD256 write of
100 % of the span logged every 100 ms, the idle gap, a second pass; it leaves the
device ``filled``.  Bandwidth against data written shows the SLC cache, whose
size the cache rule estimates (:class:`pytest_ssd.analysis.CacheRule`).  The
speed profile (speed per quantum) comes from the same logs.

Every pass logs each I/O's completion; its windows (100 ms, quick 10 ms) carry
the bytes that completed in them, so the "written" axis ends exactly at fio's
``io_bytes`` (checked within 0.5 %).  Each pass's windows are kept as a series
named after its job (``fill-pass-1``, ``fill-pass-2``, ``speed-read``;
:func:`pytest_ssd.methods.csd.figures.fill.series_of`), so the results database can compare
drives' curves long after the run; a large per-I/O log is kept gzip-compressed.

``test_speed_profile_read`` reads the filled span once with fio, shaped like dd
(1 MiB, one ``pread`` at a time, direct I/O), for the profile.  Then dd, the
independent reader (seed 002 validated its tool against ``cp``), and fio read the
same chunks spread over the span in turn (dd first on even chunks, fio first on
odd ones), so that a busy host slows both alike.  Both figures, their ratio and
each chunk's speed per tool are recorded.  The tools disagree (the test fails) only
when every chunk's speed of one lies beyond the factor that
:class:`pytest_ssd.methods.csd.workloads.fill.Agreement` justifies from every chunk's of the other;
when a tool's own spread over the chunks is wider than the gap, the host's noise
decides and the check is skipped as "not judged: noise" with the spreads
(:mod:`pytest_ssd.verdict.noise`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from pytest_ssd import ALL_CLASSES, CrossCheck, FioJob, FioRun, SsdBench
from pytest_ssd import cross_check as cross_check_of
from pytest_ssd.analysis import (
    CacheEstimate,
    FillPass,
    SelfCheck,
    SpeedProfile,
    estimate_cache,
    fill_pass,
    log_path,
    read_io_log,
    shrink_log,
    speed_profile,
)
from pytest_ssd.methods.csd.figures import fill as graphs
from pytest_ssd.methods.csd.workloads.fill import (
    SELF_CHECK,
    FillTiming,
    check_chunks,
    check_job,
    dd_read,
    fill_job,
    idle_gap_s,
    read_job,
    timing,
)
from pytest_ssd.methods.csd.workloads.flow import FILL_DRIVE_STATE

pytestmark = pytest.mark.ssd_applies(*ALL_CLASSES)  # csd applies to every class

MiB, GiB = 1 << 20, 1 << 30
#: seconds dd gets beyond ten times fio's read of the same span
DD_TIMEOUT_MARGIN_S = 60.0
#: how far the windows' bytes may miss fio's byte count (they are the same I/Os)
COVERAGE_TOLERANCE = 0.005
#: how far the quanta's running mean may miss fio's mean (the last partial quantum; fio's
#: runtime past the last completion is measured and allowed on top)
MEAN_TOLERANCE = 0.05


def logged(fio_run: FioRun, job: FioJob, name: str, direction: str, row: FillTiming) -> FillPass:
    """A pass from the run's per-I/O log and fio's totals; a large log is then compressed."""
    done = fio_run.result(job).directions[direction]
    path = log_path(fio_run.artifacts, job.name, "clat")
    one = fill_pass(
        name,
        read_io_log(path),
        done.io_bytes,
        done.runtime_ms / 1000,
        row.log_ms / 1000,
        direction=direction,
    )
    shrink_log(path)
    return one


def keep(ssd: SsdBench, name: str, one: FillPass, direction: str) -> None:
    """Store the pass's logs with the results (the cross-drive comparison draws them)."""
    meta, arrays = graphs.series_of(one, direction)
    ssd.series(name, meta, **arrays)


def check_log(one: FillPass, row: FillTiming) -> None:
    """The windows add up to fio's bytes and end with the job; latencies only where I/Os were."""
    assert one.t_s[-1] <= one.runtime_s + row.log_ms / 1000, "the log ends with the job"
    assert np.all(one.bw >= 0) and np.all(one.lat_ns > 0), "a window without I/Os has no latency"
    assert one.coverage is not None and abs(one.coverage - 1) <= COVERAGE_TOLERANCE, (
        f"{one.name}: the windows hold {one.coverage} of fio's {one.io_bytes} bytes"
    )


def profile_of(one: FillPass, row: FillTiming) -> SpeedProfile:
    profile = speed_profile(one.t_s, one.written, row.quantum)
    assert profile.samples == int(one.written[-1] // row.quantum)
    assert np.all(profile.dt_s > 0)
    # the quanta's running mean is the bytes completed over the time they took: fio's mean
    if one.mean_bw is not None and profile.samples:
        ratio = float(profile.running_mean[-1]) / one.mean_bw
        # fio's runtime goes on past the last completion (to the job's end: tens of ms on a
        # busy CPU), which no window sees: that tail, measured, and a window's rounding are
        # allowed on top of the tolerance (a short quick pass would judge the CPU's load)
        tail_s = max(one.runtime_s - float(one.t_s[-1]), 0.0)
        allowed = MEAN_TOLERANCE + (tail_s + row.log_ms / 1000) / one.runtime_s
        assert abs(ratio - 1) <= allowed, (
            f"{one.name}: quanta mean / fio mean {ratio:.3f}, beyond {1 + allowed:.3f}"
            f" (fio's runtime {one.runtime_s:.3f} s, the last completion at {one.t_s[-1]:.3f} s)"
        )
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
        values[f"pass{number}_mib_s"] = None if one.mean_bw is None else one.mean_bw / MiB
        values[f"pass{number}_s"] = one.runtime_s
        values[f"pass{number}_log_coverage"] = one.coverage
        values.update({f"pass{number}_{k}": v for k, v in cache.as_dict().items()})
    return values


def fill_jobs(ssd: SsdBench) -> list[FioJob]:
    """The passes' jobs (the plan counts them before the drive's first run)."""
    row, span = timing(ssd.profile), ssd.region("device").size
    return [fill_job(number, span, row) for number in range(1, row.passes + 1)]


def read_jobs(ssd: SsdBench) -> list[FioJob]:
    """The read pass's job (the plan counts it before the drive's first run)."""
    return [read_job(ssd.region("device").size, timing(ssd.profile))]


@FILL_DRIVE_STATE
@pytest.mark.ssd_jobs(jobs=fill_jobs)
def test_fill_drive(ssd: SsdBench) -> None:
    row = timing(ssd.profile)
    span = ssd.region("device").size
    gap = idle_gap_s(ssd.profile)
    passes: list[FillPass] = []
    runs: list[FioRun] = []
    temperatures: list[dict[str, Any] | None] = []
    for number, job in enumerate(fill_jobs(ssd), 1):
        if number > 1:
            time.sleep(gap)
        runs.append(ssd.run_jobs(job))
        health = ssd.health
        temperatures.append(health.arrays() if health and health.samples else None)
        result = runs[-1].result(job)
        assert set(result.directions) == {"write"}
        assert result.directions["write"].io_bytes == job.size, "a pass writes 100 % of the span"
        passes.append(logged(runs[-1], job, f"pass {number}", "write", row))
        check_log(passes[-1], row)
        keep(ssd, job.name, passes[-1], "write")

    caches = [estimate_cache(one, row.cache) for one in passes]
    for cache in caches:
        if cache.cache_bytes is not None:
            assert 0 <= cache.cache_bytes <= span and cache.post_bw is not None
    writes = [r.result(f"fill-pass-{n}").directions["write"] for n, r in enumerate(runs, 1)]
    clats = [w.clat for w in writes if w.clat is not None]
    assert len(clats) == len(writes), "fio measured every pass's completion latency"
    lat_mean = sum(c.mean_ns * c.samples for c in clats) / sum(c.samples for c in clats)
    windows = np.concatenate([one.lat_ns for one in passes])
    assert windows.min() <= lat_mean <= windows.max(), "fio's mean lies among the window means"
    ssd.derive(
        "fill",
        {
            **pass_values(passes, caches),
            "span_gib": span / GiB,
            "idle_gap_s": gap,
            "idle_gap_measured_s": runs[1].started - runs[0].ended,
            "log_interval_ms": row.log_ms,
            "clat_mean_ms": lat_mean / 1e6,
            "lat_max_window_ms": float(windows.max()) / 1e6,
            "clat_max_ms": max(w.clat.max_ns for w in writes if w.clat) / 1e6,
        },
    )

    series = [(one.name, profile_of(one, row)) for one in passes]
    ssd.derive("fill-speed", speed_values(series, row))
    ssd.figure(graphs.bw_vs_written(passes, caches), "fill bandwidth vs written")
    ssd.figure(graphs.bw_vs_time(passes, temperatures), "fill bandwidth vs time")
    ssd.figure(graphs.latency_vs_time(passes, gap), "fill latency vs time")
    ssd.figure(graphs.mean_bars(passes), "fill mean bandwidth")
    ssd.figure(graphs.speed_per_quantum(series, row.moving_n), "fill speed profile")
    ssd.figure(graphs.speed_histogram(series, row.sustained_pct), "fill speed histogram")


def cross_check(
    ssd: SsdBench, span: int, row: FillTiming, read_s: float
) -> tuple[SelfCheck, list[float], list[float], float]:
    """dd and fio over the same chunks in turn: their agreement overall, each chunk's MiB/s
    per tool (fio's, dd's), and dd's seconds in all."""
    timeout = DD_TIMEOUT_MARGIN_S + 10 * read_s
    dd_bytes = dd_s = fio_bytes = fio_s = 0.0
    fio_speeds: list[float] = []
    dd_speeds: list[float] = []
    chunks = check_chunks(span, row)
    # a minute or more on a real drive, and dd reports only at its end: its elapsed time
    with ssd.progress("dd cross-check", planned=f"{len(chunks)} chunks, dd and fio in turn"):
        for index, chunk in enumerate(chunks):
            job = check_job(index, *chunk, row)
            for tool in ("dd", "fio") if index % 2 == 0 else ("fio", "dd"):
                if tool == "fio":
                    done = ssd.run(job, record=False).directions["read"]
                    assert done.io_bytes == chunk[1], f"fio read chunk {index} whole"
                    fio_bytes, fio_s = fio_bytes + done.io_bytes, fio_s + done.runtime_ms / 1000
                    fio_speeds.append(done.io_bytes / MiB / max(done.runtime_ms / 1000, 1e-3))
                    continue
                folder = ssd.artifacts / f"dd-{index}"
                count, seconds = dd_read(
                    ssd.dut.path, chunk, row, folder, timeout, machine=ssd.machine
                )
                assert count == chunk[1], f"dd read chunk {index} whole"
                dd_bytes, dd_s = dd_bytes + count, dd_s + seconds
                dd_speeds.append(count / MiB / seconds)
    return SelfCheck(fio_bytes / fio_s, dd_bytes / dd_s, "dd"), fio_speeds, dd_speeds, dd_s


def judge_cross_check(check: CrossCheck) -> None:
    """Fail when the tools' samples separate beyond the factor; noise is not judged (a skip)."""
    if check.verdict == CrossCheck.NOISE:
        pytest.skip(check.line())
    assert check.verdict != CrossCheck.DISAGREES, check.line()


@pytest.mark.dut_state("filled", phase=2)
@pytest.mark.ssd_jobs(jobs=read_jobs)
def test_speed_profile_read(ssd: SsdBench) -> None:
    row = timing(ssd.profile)
    span = ssd.region("device").size
    (job,) = read_jobs(ssd)
    fio_run = ssd.run_jobs(job)
    read = fio_run.result(job).directions["read"]
    assert read.io_bytes == job.size, "fio read the whole span"
    one = logged(fio_run, job, "read", "read", row)
    check_log(one, row)
    keep(ssd, job.name, one, "read")
    profile = profile_of(one, row)
    check, fio_speeds, dd_speeds, dd_s = cross_check(ssd, span, row, read.runtime_ms / 1000)
    factor = SELF_CHECK.factor(ssd.dut.scratch)
    tools = cross_check_of(("fio", fio_speeds), ("dd", dd_speeds), factor)

    series = [("read", profile)]
    ssd.derive(
        "speed-read",
        {
            **speed_values(series, row),
            "read_s": one.runtime_s,
            "log_mean_mib_s": float(profile.running_mean[-1]) / MiB,
            "dd_s": dd_s,
            **check.as_dict(),
            "tolerance_factor": factor,
            "cross_check": tools.verdict,
            "cross_check_samples": tools.as_dict(),
        },
    )
    ssd.figure(graphs.speed_per_quantum(series, row.moving_n), "read speed profile")
    ssd.figure(graphs.speed_histogram(series, row.sustained_pct), "read speed histogram")
    judge_cross_check(tools)
