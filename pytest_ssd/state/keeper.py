"""Brings a device to the state a test needs, step by step, and logs every transition.

Each transition records its steps with duration, the kernel's byte counters
(written, read, discarded) and fio's own count, so the report shows exactly
what the device went through and what it cost in endurance.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.db.arrays import pack
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import present
from pytest_ssd.fio.engine import run_jobs
from pytest_ssd.health import Sampler, summarize
from pytest_ssd.purge.extra import PurgeProvider
from pytest_ssd.results.record import iso
from pytest_ssd.results.transition import StepDone, Transition
from pytest_ssd.state import actions
from pytest_ssd.state.accounting import Counters
from pytest_ssd.state.layout import Layout
from pytest_ssd.state.progress import Plan, Progress, Write, log_writer
from pytest_ssd.state.services import DeviceServices
from pytest_ssd.state.speeds import SpeedBook
from pytest_ssd.state.steps import Context, Step, path
from pytest_ssd.state.tracker import DeviceState, Need
from pytest_ssd.state.written import WrittenMap


@dataclass(kw_only=True)
class StateKeeper:
    """Keeps one device's state in this process and runs the transitions tests need."""

    device: str
    target: Path
    identity: DeviceIdentity
    state: DeviceState
    folder: Path
    #: the device's machine: the guard and same-device check before every step, health
    #: sampling, the fio runner, the kernel's counters
    services: DeviceServices
    speeds: SpeedBook
    speed_key: str
    purge_method: str | None = None
    #: where progress of long steps goes (the terminal); None: a progress.log per step
    progress: Write | None = None
    transitions: int = 0
    #: a test has used the device (the consumer flow rests before the next measurement)
    used: bool = False
    #: the sweep (test function and state) of the last test: its points rest once, not each
    sweep: str = ""
    #: the device's written map: a purge empties it, covering writes fill it, discards cut it
    written: WrittenMap = field(default_factory=WrittenMap)
    #: draws a steady-state verdict's graphs (the session passes the report's; none in tests)
    charts: actions.Charts = actions.no_charts
    #: purge methods suites and plugins added (``pytest_ssd_purge_methods``), tried first
    added_purges: tuple[PurgeProvider, ...] = ()

    @property
    def context(self) -> Context:
        added, machine = self.added_purges, self.services.machine
        name = self.purge_method or actions.purge_name(self.identity, added, machine)
        return Context(self.state.capacity, self.state.profile, name)

    def plan(self, need: Need) -> list[Step]:
        """The steps that would bring the device to *need* now (none when it is there)."""
        if self.state.satisfies(need):
            return []
        source = self.state.current
        if need.pristine and self.state.current == need.state:
            source = None  # dirty regions: re-establish from a purge
        return path(source, need.state, self.context)

    def bring(
        self, need: Need, test: str, meanwhile: Callable[[Layout], None] | None = None
    ) -> tuple[Transition | None, Layout]:
        """Bring the device to *need*; return the transition (None when already there).

        *meanwhile* (given the state's layout) is called once the transition's last
        purge is done, before the steps after it: what runs next may start its fio
        processes then (their start-up overlaps those steps; the device keeps its size
        and identity).  Not called when the transition ends with a purge.
        """
        steps = self.plan(need)
        if not steps:
            return None, present(self.state.layout, "the layout of the state reached")
        reason = self._reason(need)
        self.services.guard()
        self.transitions += 1
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", str(need.state)).strip("-")
        folder = self.folder / f"{self.transitions:02d}-{safe}"
        source = None if self.state.current is None else str(self.state.current)
        self.state.forget(f"transition to {need.state} did not finish")
        started, clock = time.time(), time.monotonic()
        after_purge = max((n for n, step in enumerate(steps) if step.kind == "purge"), default=-1)
        done = []
        for index, step in enumerate(steps):
            if meanwhile is not None and index == after_purge + 1:
                meanwhile(self.state.layout_of(need.state))
            self.services.same()
            done.append(self._run(index + 1, step, folder))
        layout = self.state.establish(need.state)
        transition = Transition(
            device=self.device,
            test=test,
            source=source,
            target=str(need.state),
            reason=reason,
            steps=done,
            start=iso(started),
            end=iso(time.time()),
            seconds=time.monotonic() - clock,
            layout=layout.as_dict(),
        )
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "transition.json").write_text(json.dumps(transition.as_dict(), indent=1))
        return transition, layout

    def _reason(self, need: Need) -> str:
        if self.state.current is None:
            return f"state {self.state.lost}"
        if self.state.current == need.state:
            return f"{need.state} needed pristine; written: {', '.join(sorted(self.state.dirty))}"
        return f"device in {self.state.current}"

    def _run(self, index: int, step: Step, folder: Path) -> StepDone:
        artifacts = folder / f"{index:02d}-{step.name}"
        before = self.services.counters()
        clock = time.monotonic()
        sampled = step.kind in ("fio", "steady")
        sampler = self.services.sampler() if sampled else Sampler(None, 0)
        with sampler:
            fio_written, detail, verdict, shown = self._execute(step, artifacts)
        seconds = time.monotonic() - clock
        health = _health(sampler, artifacts) if sampler.active else None
        after = self.services.counters()
        kernel = _delta(after, before)
        self.speeds.record(self.speed_key, step, seconds)
        return StepDone(
            kind=step.kind,
            name=step.name,
            text=step.text,
            seconds=seconds,
            kernel=kernel,
            fio_written=fio_written,
            detail=detail,
            verdict=verdict,
            figures=shown,
            health=health,
        )

    def _execute(
        self, step: Step, artifacts: Path
    ) -> tuple[int, str, dict[str, Any] | None, tuple[str, ...]]:
        """Run one step: (bytes fio wrote, detail, steady-state verdict, figures)."""
        if step.kind == "purge":
            self.written.clear()  # from the first command on, nothing is known written
            return (
                0,
                actions.purge(
                    self.identity,
                    self.purge_method,
                    artifacts,
                    self.added_purges,
                    machine=self.services.machine,
                    view=self.services.view,
                ),
                None,
                (),
            )
        if step.kind == "fio":
            write = self.progress or log_writer(artifacts / "progress.log")
            planned = Plan(step.write_bytes, directions=("write",))  # a step: its writes
            follow = Progress(f"{self.device} {step.name}", planned, write)
            runner = self.services.runner()
            with follow, self.services.feeding(follow) as on_status:
                fio_run = run_jobs(
                    step.jobs, self.target, artifacts=artifacts, on_status=on_status, runner=runner
                )
            for job in step.jobs:
                self.written.note(job, self.state.capacity)
            written = sum(
                d.io_bytes
                for job in step.jobs
                for name, d in fio_run.result(job).directions.items()
                if name == "write"
            )
            return written, "", None, ()
        if step.kind == "discard":
            offset, size = present(step.discard, "the discard step's range")
            self.written.remove(offset, offset + size)
            actions.discard(self.identity, offset, size, artifacts, self.services.machine)
            return 0, "", None, ()
        if step.kind == "idle":
            time.sleep(step.idle_s)
            return 0, "", None, ()
        outcome = actions.steady(self, step, artifacts)
        return outcome.written, outcome.summary, outcome.verdict, outcome.figures


def _health(sampler: Sampler, artifacts: Path) -> dict[str, Any]:
    """The step's health summary; its samples go to ``health.npz`` in the step's artifacts."""
    if sampler.samples:
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "health.npz").write_bytes(pack(sampler.arrays()))
    return summarize(sampler)


def _delta(after: Counters | None, before: Counters | None) -> dict[str, int] | None:
    if after is None or before is None:
        return None
    return (after - before).as_dict()
