"""A WSAT workload on a device: the run, its log, the steady-state region, graphs and records.

Recorded on the test: the measurement (fio's totals), the series
``wsat-<workload>`` (per log window: ``t_s``, ``iops``, ``written``; per round:
``round_iops``) and the derived record ``wsat-<workload>`` (what ended the run,
bytes written against capacity, mean IOPS overall and in the steady region, the
region and the SNIA verdict on its first window), and the two graphs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_ssd.analysis.fill import log_path, read_log
from pytest_ssd.bench import SsdBench
from pytest_ssd.figures import PALETTE
from pytest_ssd.fio.engine import FioRun
from pytest_ssd.fio.job import FioJob
from pytest_ssd.methods.wsat import figures as figs
from pytest_ssd.methods.wsat.workloads import (
    SteadyRegion,
    WsatLog,
    WsatTiming,
    WsatWorkload,
    amount_of,
    round_means,
    steady_region,
    timing,
    wsat_log,
)

GiB = 1 << 30
#: a run that stops this much short of its cap was ended by the amount
CAP_SLACK = 0.98


@dataclass(frozen=True, kw_only=True)
class WsatRun:
    """One workload's run: fio's totals, its log and the steady-state region."""

    workload: WsatWorkload
    job: FioJob
    timing: WsatTiming
    span: int
    log: WsatLog
    region: SteadyRegion
    written: int
    moved: int
    runtime_s: float
    iops: float

    @property
    def ended_by(self) -> str:
        """'amount' (4 x capacity gone through) or 'time cap'."""
        return "amount" if self.moved >= amount_of(self.job) else "time cap"

    def values(self) -> dict[str, Any]:
        """The derived record."""
        t = self.timing
        steady = _steady_iops(self.region)
        return {
            "workload": self.workload.name,
            "title": self.workload.title,
            "block_size": self.workload.block_size,
            "read_pct": self.workload.read_pct,
            "iodepth": t.iodepth,
            "numjobs": t.numjobs,
            "span_bytes": self.span,
            "amount_bytes": amount_of(self.job),
            "time_cap_s": t.time_cap_s,
            "ended_by": self.ended_by,
            "runtime_s": self.runtime_s,
            "written_bytes": self.written,
            "moved_bytes": self.moved,
            "written_capacities": self.written / self.span,
            "iops": self.iops,
            "steady_iops": steady,
            "log_ms": t.log_ms,
            "log_coverage": float(self.log.written[-1]) / self.written if self.written else None,
            "region": self.region.as_dict(t.round_s),
        }


def _steady_iops(region: SteadyRegion) -> float | None:
    """Mean IOPS over the rounds of the steady region, None when there is none."""
    inside = [region.rounds[i - 1] for first, last in region.spans for i in range(first, last + 1)]
    return float(np.mean(inside)) if inside else None


def _bw_log(fio_run: FioRun, job: FioJob) -> WsatLog:
    found = sorted(fio_run.artifacts.glob(f"log-{job.name}_bw.*.log"))
    return wsat_log(
        read_log(found[0] if found else log_path(fio_run.artifacts, job.name, "bw")), job.block_size
    )


def run_wsat(ssd: SsdBench, workload: WsatWorkload) -> WsatRun:
    """*workload* from FOB until 4 x the span or the time cap; records, region and graphs."""
    plan = timing(ssd.profile)
    span = ssd.region("device").size
    job = workload.job(span, plan)
    fio_run = ssd.run_jobs(job)
    result = fio_run.result(job)
    log = _bw_log(fio_run, job)
    write = result.directions.get("write")
    run = WsatRun(
        workload=workload,
        job=job,
        timing=plan,
        span=span,
        log=log,
        region=steady_region(round_means(log, plan.round_s)),
        written=write.io_bytes if write else 0,
        moved=result.io_bytes,
        runtime_s=max(d.runtime_ms for d in result.directions.values()) / 1000,
        iops=sum(d.iops for d in result.directions.values()),
    )
    name = f"wsat-{workload.name}"
    values = run.values()
    ssd.series(
        name,
        {"kind": "wsat", **{k: v for k, v in values.items() if k != "region"}},
        t_s=log.t_s,
        iops=log.iops,
        written=log.written,
        round_iops=np.array(run.region.rounds),
    )
    ssd.derive(name, values)
    ssd.note(f"{name}.steady", run.region.summary(plan.round_s))
    curve = figs.WsatCurve.of(ssd.dut.id, PALETTE[0], log, run.region, plan.round_s)
    health = ssd.health.arrays() if ssd.health and ssd.health.samples else None
    ssd.figure(figs.iops_vs_time([curve], workload.title, health), f"{name} iops vs time")
    ssd.figure(figs.iops_vs_written([curve], workload.title), f"{name} iops vs written")
    return run


def check_run(run: WsatRun) -> None:
    """The run stopped at its amount or its cap, and the log accounts for what fio counted."""
    job, plan = run.job, run.timing
    if run.ended_by == "amount":
        assert run.moved == amount_of(job), f"{run.moved} B moved, asked {amount_of(job)}"
    else:
        assert run.runtime_s >= CAP_SLACK * plan.time_cap_s, f"stopped at {run.runtime_s} s"
    assert run.written > 0 and run.iops > 0
    assert len(run.log.t_s) and np.all(np.diff(run.log.t_s) > 0), "one window after another"
    assert np.all(np.diff(run.log.written) >= 0), "bytes written only grow"
    assert len(run.region.rounds) == int(run.log.t_s[-1] // plan.round_s), "whole rounds"
