"""The destructive actions of transitions: purge, discard a range, run to steady state.

Callers have passed the safety guard (the keeper calls it before the first
step); every command goes through :func:`pytest_ssd.proc.run`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import SsdError, ToolError, present
from pytest_ssd.fio.engine import run_jobs
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge import extra
from pytest_ssd.purge.execute import ViewOf
from pytest_ssd.purge.extra import PurgeProvider
from pytest_ssd.purge.tools import BLKDISCARD_FORCE
from pytest_ssd.state.steps import STEADY_CAP_FACTOR, Step
from pytest_ssd.steady.fio_native import FioSteadyRule, FioSteadyState
from pytest_ssd.steady.snia import SniaTracker, SniaVerdict

if TYPE_CHECKING:
    from pytest_ssd.state.keeper import StateKeeper

UTIL_LINUX_HINT = "install util-linux ('apt-get install util-linux')"
TOOL_TIMEOUT_S = 3600.0


def purge_name(identity: DeviceIdentity, added: tuple[PurgeProvider, ...], machine: Machine) -> str:
    """The purge method that would run, for plans; says so when none can."""
    try:
        return extra.pick(identity, added, None, machine).name
    except SsdError as exc:
        return f"none possible: {exc}"


def purge(
    identity: DeviceIdentity,
    forced: str | None,
    artifacts: Path,
    added: tuple[PurgeProvider, ...] = (),
    *,
    machine: Machine,
    view: ViewOf = lambda path: None,
) -> str:
    """Purge the whole device with the strongest method (or *forced*); one line on what ran.

    A method a plugin added (:mod:`pytest_ssd.purge.extra`) comes first when it applies
    (on a test host: one whose capabilities reach hosts), then pytest-ssd's own.
    """
    chosen = extra.pick(identity, added, forced, machine)
    return extra.run(chosen, identity, artifacts, machine, view)


def discard(
    identity: DeviceIdentity, offset: int, size: int, artifacts: Path, machine: Machine
) -> None:
    """Deallocate [offset, offset + size): blkdiscard on a device, a punched hole in a file."""
    if identity.kind == "file":
        argv = [
            machine.which("fallocate", UTIL_LINUX_HINT),
            "--punch-hole",
            "--keep-size",
            f"--offset={offset}",
            f"--length={size}",
            identity.path,
        ]
    else:
        argv = [
            machine.which("blkdiscard", UTIL_LINUX_HINT),
            BLKDISCARD_FORCE,
            f"--offset={offset}",
            f"--length={size}",
            identity.path,
        ]
    done = machine.run(argv, timeout=TOOL_TIMEOUT_S, artifacts=artifacts, name=Path(argv[0]).name)
    if done.returncode:
        raise ToolError(f"{done.command} failed ({done.returncode}): {done.last_error_line()}")


@dataclass(frozen=True)
class SteadyOutcome:
    """What a run to steady state wrote and concluded, with its graphs."""

    written: int
    summary: str
    verdict: dict[str, object] | None
    figures: tuple[str, ...]


#: ``charts(verdict, folder, quantity, unit)`` saves a steady-state verdict's graphs in
#: *folder* and returns their paths; the session gives :func:`figures.steady.save_charts`
Charts = Callable[[FioSteadyState | SniaVerdict, Path, str, str], tuple[str, ...]]


def no_charts(
    verdict: FioSteadyState | SniaVerdict, folder: Path, quantity: str, unit: str
) -> tuple[str, ...]:
    """Draw nothing (a keeper without a report)."""
    return ()


def steady(keeper: StateKeeper, step: Step, artifacts: Path) -> SteadyOutcome:
    """Run the step's workload until steady state: bytes written, verdict, graphs."""
    state = keeper.state
    span = state.profile.span(state.capacity)
    workload = present(step.steady, "the steady step's workload")
    if step.steady_rule == "snia":
        return _snia_rounds(keeper, step, artifacts, span)
    fio_rule = FioSteadyRule(duration_s=state.profile.ss_duration)
    job = workload.job(
        step.name,
        size=span,
        io_bytes=STEADY_CAP_FACTOR * span,
        extra=fio_rule.options(),
        percentiles=(),
    )
    fio_run = run_jobs((job,), keeper.target, artifacts=artifacts, runner=keeper.services.runner())
    result = fio_run.result(job)
    written = result.directions["write"].io_bytes if "write" in result.directions else 0
    verdict = result.steadystate
    if verdict is None:
        return SteadyOutcome(written, "fio reported no steady-state block", None, ())
    shown = keeper.charts(verdict, artifacts, "", "")
    return SteadyOutcome(written, verdict.summary(), verdict.as_dict(), shown)


def _snia_rounds(keeper: StateKeeper, step: Step, artifacts: Path, span: int) -> SteadyOutcome:
    workload = present(step.steady, "the steady step's workload")
    tracker = SniaTracker()
    seconds = keeper.state.profile.seconds(keeper.state.profile.snia_round_s)
    written = 0
    while not tracker.done:
        n = len(tracker.values) + 1
        job = workload.job(f"round-{n:02d}", size=span, runtime_s=seconds, percentiles=())
        result = run_jobs(
            (job,),
            keeper.target,
            artifacts=artifacts / f"round-{n:02d}",
            runner=keeper.services.runner(),
        )
        measured = result.result(job)
        written += measured.directions["write"].io_bytes if "write" in measured.directions else 0
        tracker.add(sum(d.iops for d in measured.directions.values()))
    verdict = present(tracker.verdict, "the SNIA verdict of finished rounds")
    shown = keeper.charts(verdict, artifacts, f"{workload} IOPS", "IOPS")
    return SteadyOutcome(written, verdict.summary(), verdict.as_dict(), shown)
