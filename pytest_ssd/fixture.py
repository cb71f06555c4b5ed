"""The per-test ``ssd`` object: runs fio on the test's device and records what it measured."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure
from numpy.typing import ArrayLike
from pytest_html import extras

from pytest_ssd.analysis.repeat import aggregate
from pytest_ssd.db.arrays import pack
from pytest_ssd.errors import ConfigError
from pytest_ssd.fio.engine import FioRun, run_jobs
from pytest_ssd.fio.job import FioJob
from pytest_ssd.health import Sampler, summarize
from pytest_ssd.health.sources import KELVIN
from pytest_ssd.report import figures
from pytest_ssd.results.record import (
    DERIVED_PROPERTY,
    PROPERTY,
    SERIES_PROPERTY,
    SPEC_PROPERTY,
    Measurement,
    iso,
)
from pytest_ssd.session import Dut, SsdSession
from pytest_ssd.specs import Datasheet, Quantity, SpecCheck, SpecLine, Verdict
from pytest_ssd.state.actions import discard
from pytest_ssd.state.keeper import TRANSITION_PROPERTY
from pytest_ssd.state.layout import Layout, Region
from pytest_ssd.state.plan import MARKER
from pytest_ssd.state.profile import RESTING_STATES, Profile
from pytest_ssd.state.tracker import Need

FIGURES_KEY = pytest.StashKey[list[dict[str, Any]]]()


@dataclass
class SsdBench:
    """What a benchmark test uses: ``ssd.run(job)``, ``ssd.figure(fig, title)``."""

    session: SsdSession
    dut: Dut
    node: pytest.Item
    measurements: list[Measurement] = field(default_factory=list)
    #: the state the test declared (``@pytest.mark.dut_state``) and its regions, once reached
    need: Need | None = None
    layout: Layout | None = None
    wrote: bool = False
    #: the health sampler of the last ``run`` (its samples, or why there are none)
    health: Sampler | None = None
    _runs: int = 0

    @property
    def artifacts(self) -> Path:
        return self.session.artifacts_for(self.node.nodeid)

    @property
    def profile(self) -> Profile:
        """quick or full for this device (``--ssd-profile``; scratch defaults to quick)."""
        return self.session.profile(self.dut)

    def region(self, name: str) -> Region:
        """A region of the declared state: ``ssd.region("seq")`` in ``cssd``."""
        if self.layout is None:
            raise ConfigError(
                f"{self.node.nodeid} asks for region {name!r} but declares no device state: "
                f"add @pytest.mark.{MARKER}(...)"
            )
        return self.layout.region(name)

    def guard_writes(self) -> None:
        """Skip under --ssd-readonly; refuse (SafetyError) when the device is not safe to write."""
        if self.dut.readonly:
            pytest.skip(f"--ssd-readonly: this test writes to {self.dut.path}")
        self.session.guard_writes(self.dut)

    def enter_state(self, need: Need) -> None:
        """Bring the device to the declared state; the transition is recorded on this test."""
        self.need = need
        keeper = self.session.keeper(self.dut.id)
        if self.dut.readonly and keeper.plan(need):
            pytest.skip(f"--ssd-readonly: reaching state {need.state} writes to {self.dut.path}")
        transition, self.layout = keeper.bring(need, self.node.nodeid)
        if transition is None and need.state.name in RESTING_STATES and keeper.used:
            time.sleep(self.profile.seconds(self.profile.idle.between_tests_s))
        keeper.used = True
        if transition is not None and transition.purges:
            self.dut.written = 0  # the prefix a prefill wrote is gone
        if transition is not None:
            self.node.user_properties.append((TRANSITION_PROPERTY, transition.to_json()))

    def leave_state(self, passed: bool) -> None:
        """After the test: a declared ``leaves=`` state, or what a failed write did."""
        keeper = self.session.keepers.get(self.dut.id)
        if keeper is not None:
            keeper.state.after_test(self.need, self.node.nodeid, passed, self.wrote)

    def run(self, *jobs: FioJob, setup: Sequence[FioJob] = (), record: bool = True) -> FioRun:
        """Run *jobs* in one fio process on the device; record each job's measurement.

        *setup* jobs (a prefill, say) run first in the same process, one after
        another (``stonewall``), and are not recorded: one fio start-up, not two.
        With ``--ssd-repeat=N`` a recorded run happens N times in seed 004's cycle
        (see :meth:`_next_cycle`); each run is recorded, their spread goes to the
        derived record ``<job>.repeat``, and the last run is returned.
        """
        every = (*setup, *jobs)
        if any(job.writes for job in every):
            self.guard_writes()
            self.wrote = True
            keeper = self.session.keeper(self.dut.id)
            for job in every:
                keeper.state.observe(job, self.node.nodeid)
        times = self.session.options.repeat if record else 1
        fio_run = None
        measured_writes = any(job.writes for job in jobs)
        for index in range(times):
            if index and measured_writes:
                self._next_cycle(every)
            # reads: preconditioned once (the setup), then ramp + measure per run (seed 004)
            fio_run = self._run_once(every if index == 0 or measured_writes else tuple(jobs))
            for job in jobs if record else ():
                self._record(job, fio_run, repeat=index + 1 if times > 1 else None)
        if times > 1:
            for job in jobs:
                self._aggregate(job.name)
        assert fio_run is not None
        return fio_run

    def _run_once(self, every: tuple[FioJob, ...]) -> FioRun:
        self._runs += 1
        folder = self.artifacts / f"{self._runs:02d}-{every[0].name}"
        with self.session.sampler(self.dut) as sampler:
            fio_run = run_jobs(every, self.dut.path, artifacts=folder, readonly=self.dut.readonly)
        self._keep_health(sampler, every[0].name)
        for job in every:
            self._note_written(job)
        return fio_run

    def _next_cycle(self, every: tuple[FioJob, ...]) -> None:
        """Before a repeated write run: TRIM -> precondition -> cool-down (seed 004).

        A declared state is re-established from scratch (the keeper purges or
        trims and preconditions as the state's path says); without one the span
        the jobs touch is discarded and the setup jobs run again with the job.
        """
        if self.need is not None:
            transition, self.layout = self.session.keeper(self.dut.id).bring(
                replace(self.need, pristine=True), self.node.nodeid
            )
            if transition is not None:
                self.node.user_properties.append((TRANSITION_PROPERTY, transition.to_json()))
        else:
            start = min(job.offset for job in every)
            end = max(_span_end(job, self.dut) for job in every)
            self.session.guard_writes(self.dut)
            discard(self.dut.identity, start, end - start, self.artifacts / "trim")
            self.dut.written = min(self.dut.written, start)
        time.sleep(self.profile.seconds(self.profile.idle.between_tests_s))

    def _aggregate(self, name: str) -> None:
        runs = [m for m in self.measurements if m.name == name and "repeat" in m.workload]
        self.derive(f"{name}.repeat", aggregate(runs, self.session.options.cv_max))

    def unwritten(self, fill: FioJob) -> tuple[FioJob, ...]:
        """``(fill,)`` when the span *fill* writes is not written yet on this device, else ``()``.

        Pass the answer as ``setup=`` so reads measure written data, not holes.
        Under ``--ssd-readonly`` nothing is written: reads measure the data as found.
        """
        if self.dut.readonly or self.dut.written >= _span_end(fill, self.dut):
            return ()
        return (fill,)

    def _keep_health(self, sampler: Sampler, name: str) -> None:
        """The run's temperature series and its summary (throttling signs) on the test."""
        self.health = sampler
        if not sampler.active:
            return
        nvme = self.dut.identity.nvme
        warning_c = nvme.controller.wctemp_k - KELVIN if nvme and nvme.controller.wctemp_k else None
        summary = summarize(sampler, warning_c)
        if sampler.samples:
            self.series(f"{name}.health", {"kind": "health", **summary}, **sampler.arrays())
        self.note(f"{name}.health", summary)
        for flag in summary["throttling"]:
            self.node.user_properties.append(("ssd.throttling", f"{name}: {flag}"))

    def _note_written(self, job: FioJob) -> None:
        """A sequential full write from the start extends the known-written prefix."""
        whole_pass = job.runtime_s is None and job.io_bytes is None
        contiguous = job.offset <= self.dut.written
        if job.pattern == "seq" and job.read_pct == 0 and whole_pass and contiguous:
            self.dut.written = max(self.dut.written, _span_end(job, self.dut))

    def record(self, fio_run: FioRun, *jobs: FioJob) -> None:
        """Record *jobs* of a run made with ``record=False`` (say, the last of many rounds)."""
        for job in jobs:
            self._record(job, fio_run)

    def _record(self, job: FioJob, fio_run: FioRun, repeat: int | None = None) -> None:
        result = fio_run.result(job)
        workload = job.as_dict() if repeat is None else {**job.as_dict(), "repeat": repeat}
        measurement = Measurement(
            test=self.node.nodeid,
            device=self.dut.id,
            name=job.name,
            workload=workload,
            metrics={d: r.as_dict() for d, r in result.directions.items()},
            start=iso(fio_run.started),
            end=iso(fio_run.ended),
            artifacts=str(fio_run.artifacts.relative_to(self.session.run_dir)),
        )
        self.measurements.append(measurement)
        for direction, done in result.directions.items():
            if done.clat is not None and done.clat.bins:
                ns, count = zip(*sorted(done.clat.bins), strict=True)
                meta = {"kind": "clat-histogram", "measurement": job.name,
                        "direction": direction, "unit": "ns"}  # fmt: skip
                self.series(f"{job.name}.clat-{direction}", meta, ns=ns, count=count)
        props = self.node.user_properties
        props.append((PROPERTY, measurement.to_json()))
        props.extend(
            (f"{job.name}.{key}", value) for key, value in measurement.key_metrics().items()
        )

    def figure(self, fig: Figure, title: str) -> Path:
        """Attach *fig* to the test's row in the report and save it as PNG and SVG."""
        rendered = figures.render(fig)
        png = rendered.save(self.artifacts, title)
        extra = extras.png(rendered.png_base64, title)
        self.node.stash.setdefault(FIGURES_KEY, []).append(extra)
        return png

    def note(self, key: str, value: object) -> None:
        """Record a plain property on the test (shows in junitxml and the report)."""
        text = json.dumps(value) if isinstance(value, dict | list) else value
        self.node.user_properties.append((key, text))

    @property
    def datasheet(self) -> Datasheet | None:
        """The datasheet this device is checked against (``--datasheet`` or a match)."""
        return self.session.datasheets.get(self.dut.id)

    def spec(self, line_id: str) -> SpecLine | None:
        """A line of the device's datasheet by id, or None (no datasheet, or no such line)."""
        sheet = self.datasheet
        return next((line for line in sheet.specs if line.id == line_id), None) if sheet else None

    def check_spec(self, line: SpecLine, measured: Quantity | float) -> Verdict:
        """Check *measured* against *line*; the verdict goes to the conformance table."""
        verdict = SpecCheck(line).evaluate(measured)
        sheet = self.datasheet
        row = {"test": self.node.nodeid, "device": self.dut.id,
               "datasheet": str(sheet.path) if sheet else None, **verdict.as_dict()}  # fmt: skip
        self.node.user_properties.append((SPEC_PROPERTY, json.dumps(row, sort_keys=True)))
        return verdict

    def assert_meets_spec(self, line_id: str, measured: Quantity | float) -> None:
        """Fail with the ratio message when the datasheet has *line_id* and it is not met."""
        line = self.spec(line_id)
        if line is not None:
            verdict = self.check_spec(line, measured)
            assert verdict.met, verdict.message

    def series(self, name: str, meta: dict[str, Any] | None = None, **arrays: ArrayLike) -> Path:
        """Keep named arrays (a bandwidth log, a histogram ...) with the test's results.

        They are saved as ``<name>.npz`` in the test's artifacts and stored in the
        results database, where comparison graphs and ``pytest-ssd report`` find them.
        """
        self.artifacts.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)
        path = self.artifacts / f"{safe}.npz"
        path.write_bytes(pack(arrays))
        record = {"device": self.dut.id, "name": name, "meta": meta or {},
                  "file": str(path.relative_to(self.session.run_dir))}  # fmt: skip
        self.node.user_properties.append((SERIES_PROPERTY, json.dumps(record, sort_keys=True)))
        return path

    def derive(self, name: str, values: dict[str, Any]) -> None:
        """Record metrics derived from measurements (cache size, trimmed means ...).

        They go to results.json (``derived``) and, flattened, to the test's properties.
        Values must be JSON: numbers, strings, lists, dicts (numpy arrays as ``.tolist()``).
        """
        record = {"test": self.node.nodeid, "device": self.dut.id, "name": name,
                  "values": values}  # fmt: skip
        self.node.user_properties.append((DERIVED_PROPERTY, json.dumps(record, sort_keys=True)))
        for key, value in values.items():
            if isinstance(value, int | float | str):
                self.node.user_properties.append((f"{name}.{key}", value))


def _span_end(job: FioJob, dut: Dut) -> int:
    return job.offset + (job.size or dut.identity.size_bytes - job.offset)
