"""Running the enterprise suite's jobs on the ``ssd`` fixture: sweeps, preconditioning, QoS.

Each function runs one fio process, checks what fio did against what was
asked, records the derived values and series the report's section draws, and
attaches the test's own graphs.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_ssd.analysis import log_path, read_log
from pytest_ssd.bench import SsdBench
from pytest_ssd.figures.latency import LatencySample
from pytest_ssd.fio.engine import FioRun
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.results import JobResult
from pytest_ssd.methods.esd import figures as figs
from pytest_ssd.methods.esd.analysis import POINT_RECORD
from pytest_ssd.methods.esd.workloads import (
    QOS_NINES,
    Point,
    Precondition,
    Sweep,
    precondition,
    qos_jobs,
    timing,
)
from pytest_ssd.steady.fio_native import FioSteadyState
from pytest_ssd.text import significant
from pytest_ssd.workloads.limits import Limits

MiB = 1 << 20
#: a time-based point's measured time may fall short of the asked one by this much (fio rounds)
RUNTIME_SLACK = 0.8


def limits_of(ssd: SsdBench) -> Limits:
    """The device's logical block size and indirection unit."""
    return Limits(ssd.dut.identity.logical_block_size, ssd.dut.iu)


def value_of(job: FioJob, result: JobResult) -> float:
    """MiB/s for SEQ, IOPS for RND, all directions together."""
    done = result.directions.values()
    if job.pattern == "seq":
        return sum(d.bw_mib_s for d in done)
    return sum(d.iops for d in done)


def unit_of(job: FioJob) -> str:
    return "MiB/s" if job.pattern == "seq" else "IOPS"


def check_timed(job: FioJob, result: JobResult) -> None:
    """fio ran the job where, how and as long as asked, in the directions asked for."""
    moved = {name for name, d in result.directions.items() if d.io_bytes}
    expected = {100: {"read"}, 0: {"write"}}.get(job.read_pct, {"read", "write"})
    assert moved == expected, f"{job.name}: directions {sorted(moved)}"
    assert result.options["ioengine"] == "io_uring", f"{job.name}: io_uring"
    assert result.options["size"] == str(job.size), f"{job.name}: the whole span"
    assert (result.options["iodepth"], result.options["bs"]) == (
        str(job.iodepth),
        str(job.block_size),
    )
    assert job.runtime_s is not None
    runtime = max(d.runtime_ms for d in result.directions.values()) / 1000
    assert runtime >= RUNTIME_SLACK * job.runtime_s, f"{job.name}: ran {runtime} s"


def _skip_note(ssd: SsdBench, skipped: dict[str, str]) -> None:
    if skipped:
        ssd.note("esd.skipped", skipped)


def run_point(ssd: SsdBench, sweep: Sweep, index: int) -> float:
    """Point *index* of *sweep* (its own test): its value, recorded with the sweep it is of.

    The report draws each sweep's curve from its points' records, a point that did
    not run as a gap.  A point the drive cannot take (a write under its indirection
    unit) is recorded with the reason and skipped.
    """
    point = sweep.points[index]
    record = {
        "sweep": sweep.name,
        "title": sweep.title,
        "axis": sweep.axis,
        "unit": unit_of(point.job),
        "index": index,
        "xs": [p.x for p in sweep.points],
        "x": point.x,
        "job": point.job.name,
        "workers": point.job.numjobs,
    }
    if point.skipped is not None:
        ssd.derive(POINT_RECORD, {**record, "skipped": point.skipped})
        pytest.skip(f"{sweep.title}: {point.job.name} skipped: {point.skipped}")
    result = ssd.run(point.job)
    check_timed(point.job, result)
    value = value_of(point.job, result)
    assert value > 0
    ssd.derive(POINT_RECORD, {**record, "value": value})
    return value


def _log(fio_run: FioRun, job: FioJob, kind: str) -> tuple[np.ndarray, np.ndarray]:
    # fio numbers a log by the job's place in the file: the WDPC's is .2
    found = sorted(fio_run.artifacts.glob(f"log-{job.name}_{kind}.*.log"))
    log = read_log(found[0] if found else log_path(fio_run.artifacts, job.name, kind))
    return log.t_s, log.value


def steady_verdict(
    steady: FioSteadyState, wdpc_start_s: float, wdpc_s: float
) -> tuple[tuple[float, float] | None, str]:
    """The steady-state window to shade and the verdict's words, from the same numbers.

    The window is the rule's last ``duration_s`` seconds of WDPC; a WDPC shorter
    than that (the quick profile's small spans) holds no such window, whatever fio
    says, and is not judged.
    """
    end = wdpc_start_s + wdpc_s
    if wdpc_s < steady.duration_s:
        return None, (
            f"not judged: WDPC ran {significant(wdpc_s)} s, shorter than the rule's"
            f" {steady.duration_s} s window (fio: {steady.summary()})"
        )
    if not steady.attained:
        return None, steady.summary()
    return (end - steady.duration_s, end), steady.summary()


def precondition_log(label: str, plan: Precondition, fio_run: FioRun) -> figs.PreconditionLog:
    """WIPC and WDPC logs end to end: WDPC's clock starts where WIPC's run ended."""
    wipc = fio_run.result(plan.wipc).directions["write"]
    offset = wipc.runtime_ms / 1000
    parts = []
    for job, start in ((plan.wipc, 0.0), (plan.wdpc, offset)):
        t_bw, bw_kib = _log(fio_run, job, "bw")
        _, lat_ns = _log(fio_run, job, "lat")
        n = min(len(t_bw), len(lat_ns))
        parts.append((t_bw[:n] + start, bw_kib[:n] * 1024, lat_ns[:n] / 1000))
    t_s, bw, lat_us = (np.concatenate(columns) for columns in zip(*parts, strict=True))
    seq = plan.workload.pattern == "seq"
    value = bw / MiB if seq else bw / plan.workload.block_size
    steady = fio_run.result(plan.wdpc).steadystate
    wdpc_s = fio_run.result(plan.wdpc).directions["write"].runtime_ms / 1000
    window = steady_verdict(steady, offset, wdpc_s)[0] if steady is not None else None
    unit = "MiB/s" if seq else "IOPS"
    return figs.PreconditionLog(label, t_s, value, lat_us, unit, offset, window)


def run_precondition(ssd: SsdBench, state: str) -> figs.PreconditionLog:
    """WIPC then WDPC to steady state, logged; the graphs, the verdict, the amounts."""
    span = ssd.region("device").size
    plan = precondition(state, span, ssd.profile)
    fio_run = ssd.run_jobs(*plan.jobs)
    wipc = fio_run.result(plan.wipc).directions["write"]
    wdpc_result = fio_run.result(plan.wdpc)
    wdpc = wdpc_result.directions["write"]
    assert wipc.io_bytes == plan.wipc.io_bytes, "WIPC writes 2 x the span"
    assert plan.wdpc.io_bytes is not None and 0 < wdpc.io_bytes <= plan.wdpc.io_bytes
    assert wdpc_result.options["steadystate"] == plan.rule.spec
    steady = wdpc_result.steadystate
    assert steady is not None, "fio reports its steady-state verdict"
    log = precondition_log(ssd.dut.id, plan, fio_run)
    window, verdict = steady_verdict(steady, log.wdpc_start_s, wdpc.runtime_ms / 1000)
    assert len(log.t_s) and np.all(np.diff(log.t_s) >= 0), "one clock over both jobs"
    pattern = plan.workload.pattern
    ssd.series(
        f"precondition-{pattern}",
        {
            "kind": "esd-precondition",
            "unit": log.unit,
            "wdpc_start_s": log.wdpc_start_s,
            "window": list(log.window or ()),
            "workload": str(plan.workload),
        },
        t_s=log.t_s,
        value=log.value,
        lat_us=log.lat_us,
    )
    ssd.derive(
        f"precondition-{pattern}",
        {
            "workload": str(plan.workload),
            "span_bytes": span,
            "wipc_bytes": wipc.io_bytes,
            "wipc_s": wipc.runtime_ms / 1000,
            "wdpc_bytes": wdpc.io_bytes,
            "wdpc_s": wdpc.runtime_ms / 1000,
            "wdpc_cap_bytes": plan.wdpc.io_bytes,
            "attained": window is not None,
            "fio_attained": steady.attained,
            "window": list(window or ()),
            "rule": plan.rule.spec,
            "hold_s": plan.rule.duration_s,
            "summary": verdict,
            "steady_mean_mib_s": steady.bw_mean_bytes_s / MiB,
            "steady_mean_iops": steady.iops_mean,
        },
    )
    title = f"{pattern.upper()} preconditioning ({plan.workload})"
    health = ssd.health.arrays() if ssd.health and ssd.health.samples else None
    ssd.figure(figs.precondition_figure([log], title, health=health), f"precondition {pattern}")
    ssd.figure(figs.precondition_zoom([log], title), f"precondition {pattern} zoom")
    return log


def qos_curve(label: str, result: JobResult) -> figs.QosCurve:
    """All directions' histograms merged; the mean over every I/O from fio's means."""
    sample = LatencySample.of(label, result)
    done = [d for d in result.directions.values() if d.clat is not None and d.total_ios]
    ios = sum(d.total_ios for d in done)
    mean_ns = sum(d.clat.mean_ns * d.total_ios for d in done if d.clat) / ios
    return figs.QosCurve(label, sample, mean_ns / 1000)


def qos_points(ssd: SsdBench) -> list[Point]:
    """The QoS mixes over the whole span, a mix the drive cannot take with why."""
    return qos_jobs(ssd.region("device").size, timing(ssd.profile), limits_of(ssd))


def qos_run_jobs(ssd: SsdBench) -> list[FioJob]:
    """The QoS jobs that run (``ssd_jobs``: the plan counts them before a first run)."""
    return [p.job for p in qos_points(ssd) if p.skipped is None]


def run_qos(ssd: SsdBench) -> list[tuple[Point, figs.QosCurve]]:
    """RND 4 KiB QD1 read, write, 70/30 in one fio process; the nines graph and the table."""
    points = qos_points(ssd)
    skipped = {p.job.name: p.skipped for p in points if p.skipped is not None}
    _skip_note(ssd, skipped)
    kept = [p for p in points if p.skipped is None]
    fio_run = ssd.run_jobs(*(p.job for p in kept))
    found = []
    values: dict[str, object] = {"skipped": skipped}
    for point in kept:
        result = fio_run.result(point.job)
        check_timed(point.job, result)
        curve = qos_curve(point.job.name, result)
        assert curve.sample.total == sum(d.total_ios for d in result.directions.values())
        nines = {
            f"p{p.p:g}_us": p.ns / 1000 if p.resolved else None
            for p in curve.sample.percentiles(QOS_NINES)
        }
        values[point.job.name] = {"mean_us": curve.mean_us, "ios": curve.sample.total, **nines}
        found.append((point, curve))
    ssd.derive("qos", values)
    curves = [curve for _, curve in found]
    ssd.figure(figs.qos_figure(curves, "QoS: RND 4 KiB QD1"), "qos qd1")
    return found
