"""Admin polling under load on the ``ssd`` fixture: the runs, their records, the verdicts.

One test is one queue depth at one polling rate: the same random read run without and
with the poller, in turns (ABBA: neither side always first), the profile's rounds a
side.  Recorded: ``admin-load`` (what the section draws) and a ``qualification`` record
per check (part ``admin load``): each percentile's verdict, and whether every admin
command answered and the error log stayed as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.device.nvme import INSTALL_HINT, log_json
from pytest_ssd.errors import ToolError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.health.log import newest_error
from pytest_ssd.health.sources import without
from pytest_ssd.methods.adminload.analysis import (
    DIRECTION,
    PERCENTILES,
    PercentileVerdict,
    Run,
    judge_percentile,
)
from pytest_ssd.methods.adminload.poller import COMMANDS, TELEMETRY, Polled, Poller
from pytest_ssd.methods.adminload.workloads import (
    KIND,
    PART,
    PROFILES,
    prefill_job,
    read_job,
    span_for,
)
from pytest_ssd.verdict.tolerance import Tolerances


def jobs_of(ssd: SsdBench, qd: int, rate: float) -> list[FioJob]:
    """The prefill and the read (the plan counts both; the prefill runs only once)."""
    profile, capacity = ssd.profile.name, ssd.dut.identity.size_bytes
    job = read_job(qd, profile, capacity)
    return [prefill_job(span_for(profile, capacity)), *[job] * (2 * PROFILES[profile].rounds)]


def _record(ssd: SsdBench, check: str, verdict: str, detail: str) -> None:
    ssd.derive(
        "qualification", {"part": PART, "check": check, "verdict": verdict, "detail": detail}
    )


def _refuse(ssd: SsdBench, check: str, why: str) -> NoReturn:
    line = f"{check}: not judged: {why}"
    _record(ssd, check, "not judged", line)
    pytest.skip(line)


@dataclass
class Sides:
    """Each round's fio figures without and with polling, and each poller's work."""

    unpolled: list[Run] = field(default_factory=list)
    polled: list[Run] = field(default_factory=list)
    pollers: list[Polled] = field(default_factory=list)


def _read(ssd: SsdBench, job: FioJob, prefill: FioJob) -> Run:
    result = ssd.run(job, setup=ssd.unwritten(prefill), record=False)
    return {DIRECTION: result.directions[DIRECTION].as_dict()}


def _rounds(ssd: SsdBench, job: FioJob, poller: Poller, prefill: FioJob) -> Sides:
    sides = Sides()
    for index in range(PROFILES[ssd.profile.name].rounds):
        for polled in (False, True) if index % 2 == 0 else (True, False):
            if not polled:
                sides.unpolled.append(_read(ssd, job, prefill))
                continue
            with poller:
                sides.polled.append(_read(ssd, job, prefill))
            if poller.polled is not None:
                sides.pollers.append(poller.polled)
    return sides


def _answered(sides: Sides, before: dict[str, Any], after: dict[str, Any]) -> str:
    """'' when every admin command answered and the error log kept its newest entry;
    else the one line of what went wrong."""
    failed: dict[str, int] = {}
    for one in sides.pollers:
        for name, count in one.failed.items():
            failed[name] = failed.get(name, 0) + count
    problems = [f"{name} failed {count} times" for name, count in sorted(failed.items())]
    if len(sides.pollers) < len(sides.polled):
        problems.append("a poller gave no output")
    if after != before:
        problems.append(f"the error log has a new entry: {after}")
    return "; ".join(problems)


def measure(ssd: SsdBench, qd: int, rate: float) -> list[PercentileVerdict]:
    """Measure QD *qd* without and with polling at *rate* rounds a second; record and judge.

    Skipped in one line where the device has no NVMe admin interface (from what it
    declares: not an NVMe namespace) or nvme-cli is missing there.
    """
    label = f"QD{qd} polled {rate:g}/s"
    identity = ssd.dut.identity
    if identity.nvme is None:
        why = without(identity, "NVMe admin interface") or f"{identity.path} is not NVMe"
        _refuse(ssd, label, why)
    try:
        nvme = ssd.machine.which("nvme", INSTALL_HINT)
    except ToolError as exc:
        _refuse(ssd, label, str(exc))
    telemetry = identity.nvme.controller.telemetry
    profile, capacity = ssd.profile.name, identity.size_bytes
    job = read_job(qd, profile, capacity)
    device = Path(identity.path)
    poller = Poller(ssd.machine, nvme, device, rate, telemetry, job.planned_seconds, ssd.artifacts)
    before = newest_error(log_json(ssd.machine, device, "error-log", ssd.artifacts))
    sides = _rounds(ssd, job, poller, prefill_job(span_for(profile, capacity)))
    after = newest_error(log_json(ssd.machine, device, "error-log", ssd.artifacts))
    sheet = ssd.datasheet
    tolerances = Tolerances(sheet=sheet.baseline if sheet is not None else None)
    verdicts = [
        judge_percentile(
            f"{label} p{p:g}",
            job.name,
            p,
            unpolled=sides.unpolled,
            polled=sides.polled,
            tolerances=tolerances,
        )
        for p in PERCENTILES
    ]
    problem = _answered(sides, before, after)
    answered = f"{label}: admin commands answered"
    commands = (*COMMANDS, TELEMETRY) if telemetry else COMMANDS
    rates = [one.rate for one in sides.pollers]
    polled_line = (
        f"{answered}: {', '.join(commands)} in {sum(p.rounds for p in sides.pollers):,} rounds"
        f" at {min(rates, default=0):.2g}–{max(rates, default=0):.2g}/s"
    )
    no_telemetry = "" if telemetry else "; no telemetry read: the drive declares none (LPA bit 3)"
    ssd.derive(
        KIND,
        {
            "qd": qd,
            "rate": rate,
            "job": job.as_dict(),
            "telemetry": telemetry,
            "commands": list(commands),
            "pollers": [one.as_dict() for one in sides.pollers],
            "health_interval_s": ssd.health.interval_s if ssd.health is not None else None,
            "health_active": ssd.health.active if ssd.health is not None else False,
            "percentiles": [v.as_dict() for v in verdicts],
            "answered": problem or "yes",
        },
    )
    for verdict in verdicts:
        _record(ssd, verdict.check, verdict.verdict, verdict.detail)
    _record(
        ssd,
        answered,
        "fail" if problem else "pass",
        f"{polled_line}: {problem}" if problem else polled_line + no_telemetry,
    )
    failed = [v.detail for v in verdicts if v.verdict == "fail"]
    if problem:
        failed.append(f"{answered}: {problem}")
    if failed:
        pytest.fail("; ".join(failed), pytrace=False)
    return verdicts
