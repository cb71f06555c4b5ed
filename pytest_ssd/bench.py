"""SsdBench, the per-test ``ssd`` object: runs fio on the test's device and records what it
measured (the ``ssd`` fixture that makes it is in :mod:`pytest_ssd.plugin.fixtures`)."""

from __future__ import annotations

import contextlib
import html
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pytest_html import extras

from pytest_ssd.analysis.repeat import aggregate
from pytest_ssd.db.arrays import pack
from pytest_ssd.device.identity import binary_size
from pytest_ssd.errors import ConfigError, present
from pytest_ssd.extensions import FigureKind, figure_kinds
from pytest_ssd.fio.batch import Batch
from pytest_ssd.fio.engine import FioRun, run_jobs
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.results import FioOutput, JobResult
from pytest_ssd.health import Sampler, summarize
from pytest_ssd.health.sources import KELVIN
from pytest_ssd.machine.machine import Machine
from pytest_ssd.proc import Completed
from pytest_ssd.results.files import storage_error, write_atomic
from pytest_ssd.results.history import HOST_CPUS, PROFILE_KEY, STATE_KEY
from pytest_ssd.results.record import (
    DERIVED_PROPERTY,
    PROPERTY,
    SERIES_PROPERTY,
    SPEC_PROPERTY,
    Derived,
    Measurement,
    SeriesRecord,
    iso,
)
from pytest_ssd.results.transition import TRANSITION_PROPERTY
from pytest_ssd.site import Dut
from pytest_ssd.state.actions import discard
from pytest_ssd.state.keeper import StateKeeper
from pytest_ssd.state.layout import Layout, Region
from pytest_ssd.state.plan import MARKER
from pytest_ssd.state.profile import RESTING_STATES, Profile
from pytest_ssd.state.progress import Progress, Ticker, Write, log_writer, plan_of
from pytest_ssd.state.services import DeviceServices
from pytest_ssd.state.tracker import Need
from pytest_ssd.state.written import WrittenMap, prefill_job, span
from pytest_ssd.text import file_stem

if TYPE_CHECKING:  # a worker loads matplotlib only when a test hands it a Figure
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

    from pytest_ssd.machine.machine import FileReader

    # and the datasheet machinery only when its device has a datasheet
    from pytest_ssd.specs import Datasheet, SpecLine, Verdict
    from pytest_ssd.state.cpu import CpuTimes

#: the conformance row of a line checked on a device without a datasheet
NOT_CHECKED: dict[str, object] = {
    "verdict": "not checked",
    "reason": "the device has no datasheet",
    "measured": None,
    "ratio": None,
    "spec": None,
    "unit": "",
    "conditions": {},
    "message": "not checked: the device has no datasheet",
}

FIGURES_KEY = pytest.StashKey[list[dict[str, Any]]]()
#: an extra that asks the controller to draw a figure (:meth:`SsdBench.plot`)
PLOT_EXTRA = "ssd-plot"


def _latency_percentiles(measurement: Measurement) -> Figure:
    from pytest_ssd.figures import latency_percentiles  # noqa: PLC0415  # matplotlib: drawn

    return latency_percentiles(measurement)


#: pytest-ssd's figure of any measurement; a method's own come through ``pytest_ssd_figure_kinds``
GENERIC_KINDS = (FigureKind("latency_percentiles", _latency_percentiles, "pytest-ssd"),)


@dataclass(frozen=True, kw_only=True)
class BenchEnv:
    """What a test's ``ssd`` may use of the session: its own device's services, nothing more."""

    run_dir: Path
    #: the test's folder for fio's files, logs and figures
    artifacts: Path
    profile: Profile
    #: --ssd-repeat and --ssd-cv-max (a fraction)
    repeat: int
    cv_max: float
    datasheet: Datasheet | None
    #: the device's state keeper (made on first use), or the one made already (None: none)
    keeper: Callable[[], StateKeeper]
    kept: Callable[[], StateKeeper | None]
    #: the device's services on its machine (the guard, the same-device check, health
    #: sampling, the fio runner): the state keeper's too
    services: DeviceServices
    #: the fio batch holding this sweep's points (``ssd_points(..., jobs=)``), if one runs
    batch: Callable[[], Batch | None] = lambda: None
    #: where live lines of long measurements go (the terminal); None: a progress.log
    progress: Write | None = None


@dataclass
class SsdBench:
    """What a benchmark test uses: ``ssd.run(job)``, ``ssd.figure(fig, title)``.

    Made by the ``ssd`` fixture for one test on one device; it reaches the
    session only through :class:`BenchEnv`.
    """

    dut: Dut
    _node: pytest.Item
    _env: BenchEnv
    #: what this test measured so far
    measurements: list[Measurement] = field(default_factory=list)
    #: the state the test declared (``@pytest.mark.dut_state``), once reached
    need: Need | None = None
    _layout: Layout | None = None
    #: the health sampler of the last ``run`` (its samples, or why there are none)
    health: Sampler | None = None
    #: the device's machine's CPUs during the last run (:func:`pytest_ssd.state.cpu.host_cpus`)
    _cpus: dict[str, float] | None = None
    _runs: int = 0
    #: a line by elapsed time is shown (``progress``): the runs inside show none of their own
    _ticking: bool = False
    #: job name -> direction -> its repeats' latency histograms, until they are aggregated
    _histograms: dict[str, dict[str, list[tuple[tuple[int, int], ...]]]] = field(
        default_factory=dict
    )

    @property
    def machine(self) -> Machine:
        """The machine the device is in: run programs on the device there (``machine.run``)."""
        return self._env.services.machine

    @property
    def artifacts(self) -> Path:
        return self._env.artifacts

    @property
    def profile(self) -> Profile:
        """quick or full for this device (``--ssd-profile``; scratch defaults to quick)."""
        return self._env.profile

    def region(self, name: str) -> Region:
        """A region of the declared state: ``ssd.region("seq")`` in ``cssd``."""
        if self._layout is None:
            raise ConfigError(
                f"{self._node.nodeid} asks for region {name!r} but declares no device state: "
                f"add @pytest.mark.{MARKER}(...)"
            )
        return self._layout.region(name)

    def _guard_writes(self) -> None:
        """Skip under --ssd-readonly; refuse (SafetyError) when the device is not safe to write."""
        if self.dut.readonly:
            pytest.skip(f"--ssd-readonly: this test writes to {self.dut.path}")
        self._env.services.guard()

    def run(self, job: FioJob, *, setup: Sequence[FioJob] = (), record: bool = True) -> JobResult:
        """Run *job* on the device (after *setup*, in the same fio process); its result.

        The measurement is recorded (unless *record* is false); see :meth:`run_jobs`.
        """
        return self.run_jobs(job, setup=setup, record=record).result(job)

    def run_jobs(self, *jobs: FioJob, setup: Sequence[FioJob] = (), record: bool = True) -> FioRun:
        """Run *jobs* in one fio process on the device; record each job's measurement.

        *setup* jobs (a prefill, say) run first in the same process, one after
        another (``stonewall``), and are not recorded: one fio start-up, not two.
        With ``--ssd-repeat=N`` a recorded run happens N times in seed 004's cycle
        (see :meth:`_next_cycle`); each run is recorded, their spread goes to the
        derived record ``<job>.repeat``, and the last run is returned.
        """
        every = (*self._prefill(setup, jobs), *setup, *jobs)
        batch = self._env.batch()
        simple = record and every == jobs and self._env.repeat == 1
        if batch is not None and simple and batch.running and set(jobs) <= set(batch.waiting):
            return self._run_batched(batch, jobs)
        if any(job.writes for job in every):
            self._guard_writes()
            self._observe(every)
        times = self._env.repeat if record else 1
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
        fio_run = present(fio_run, "the last fio run")
        if record:
            self._check_covered(jobs, fio_run)
        return fio_run

    @contextlib.contextmanager
    def writing(self, jobs: Sequence[FioJob]) -> Iterator[None]:
        """For a test that runs fio its own way (a power cut, a trigger): the guard and the
        device's state as :meth:`run_jobs` gives them.  Refused (or skipped under
        ``--ssd-readonly``) unless the device is safe to write; *jobs*' writes accounted in
        its state before they run, and noted as written once the block ends without error."""
        self._guard_writes()
        self._observe(jobs)
        yield
        for job in jobs:
            self._note_written(job)

    def _observe(self, jobs: Sequence[FioJob]) -> None:
        """Account *jobs*' writes in the device's state before fio runs them."""
        keeper = self._env.keeper()
        for job in jobs:
            keeper.state.observe(job, self._node.nodeid)

    def _check_covered(self, jobs: Sequence[FioJob], fio_run: FioRun) -> None:
        """Assert the datasheet lines this point measures (the plugin marked them on it).

        A line matches a job of the same pattern, block size, QD, jobs and read share
        run over the whole device; its own test in the datasheet suite was skipped.
        """
        lines: list[SpecLine] = [m.args[0] for m in self._node.iter_markers(COVERS_MARKER)]
        if not lines:
            return
        device = self.region("device").size
        for line in lines:
            shape = (line.pattern, line.block_size, line.qd, line.jobs, line.read_pct)
            for job in jobs:
                whole = job.offset == 0 and job.size in (None, device)
                ran = (job.pattern, job.block_size, job.iodepth, job.numjobs, job.read_pct)
                if whole and ran == shape:
                    self.assert_meets_spec(line, fio_run.result(job))

    def _run_batched(self, batch: Batch, jobs: tuple[FioJob, ...]) -> FioRun:
        """Release *jobs* from the sweep's fio batch (the plugin guarded its writes at start)."""
        if any(job.writes for job in jobs):
            if not batch.checks_device:  # on a test host its agent checks at the release
                self._env.services.same()
            self._observe(jobs)
        started = time.time()
        before = self._times(batch.gates)  # a request to the batch's agent where fio runs
        with self._env.services.sampler() as sampler:
            results = batch.measure(jobs)
        ended = time.time()
        self._cpus = _cpus(before, self._times(batch.gates), results, ended - started)
        self._keep_health(sampler, jobs[0].name)
        for job in jobs:
            self._note_written(job)
        output = FioOutput(
            fio_version="", notes="released from a batch", jobs=results, disk_util=()
        )
        done = Completed(("fio", "batch", jobs[0].name), 0, "", "", ended - started)
        fio_run = FioRun(jobs, output, done, batch.folder(jobs[0]), started, ended)
        for job in jobs:
            self._record(job, fio_run)
        self._check_covered(jobs, fio_run)
        return fio_run

    def _run_once(self, every: tuple[FioJob, ...]) -> FioRun:
        self._runs += 1
        folder = self.artifacts / f"{self._runs:02d}-{every[0].name}"
        planned = plan_of(every, self._capacity)
        follow = None
        runner = self._env.services.runner()  # a test host's fio server, started on first use
        # hours on a real drive: a live line from fio's status (on a test host, from the
        # host's block-layer counters: fio --client hears fio's status only at the end)
        label = f"{self.dut.id} {every[-1].name}"
        if planned.long and not self._ticking:  # inside progress(): its line only
            follow = Progress(label, planned, self._writer(folder))
        # planned short, yet running long (a slow device, a busy host): its elapsed time
        ticker = self.progress(every[-1].name, folder) if follow is None else follow
        before = self._times()  # what else the machine did meanwhile (state.cpu)
        with (
            ticker,
            self._env.services.sampler() as sampler,
            self._env.services.feeding(follow) as on_status,
        ):
            fio_run = run_jobs(
                every,
                self.dut.path,
                artifacts=folder,
                readonly=self.dut.readonly,
                runner=runner,
                on_status=on_status,
            )
        wall = fio_run.ended - fio_run.started
        self._cpus = _cpus(before, self._times(), fio_run.output.jobs, wall)
        self._keep_health(sampler, every[0].name)
        for job in every:
            self._note_written(job)
        return fio_run

    def _times(self, reader: FileReader | None = None) -> CpuTimes | None:
        """The device's machine's CPU times now (its ``/proc/stat`` and CPU pressure), read
        by *reader* there (None: the machine itself)."""
        from pytest_ssd.state.cpu import read_times  # noqa: PLC0415  # a measuring run's

        return read_times(reader or self._env.services.machine)

    def _writer(self, folder: Path) -> Write:
        """Where live lines go: the terminal (the controller's, under xdist), else a log."""
        return self._env.progress or log_writer(folder / "progress.log")

    @contextlib.contextmanager
    def progress(self, what: str, folder: Path | None = None, planned: str = "") -> Iterator[None]:
        """Show *what* runs, by its elapsed time, once it takes over 10 s (a context manager).

        For work whose progress cannot be followed (a dd, a program of the suite's own):
        ``with ssd.progress("dd cross-check", planned="8 chunks"): ...``; the fio runs
        inside it show no line of their own.
        """
        if self._ticking:
            yield
            return
        self._ticking = True
        try:
            label = f"{self.dut.id} {what}"
            with Ticker(label, self._writer(folder or self.artifacts), planned):
                yield
        finally:
            self._ticking = False

    def _next_cycle(self, every: tuple[FioJob, ...]) -> None:
        """Before a repeated write run: TRIM -> precondition -> cool-down (seed 004).

        A declared state is re-established from scratch (the keeper purges or
        trims and preconditions as the state's path says); without one the span
        the jobs touch is discarded and the setup jobs run again with the job.
        """
        if self.need is not None:
            transition, self._layout = self._env.keeper().bring(
                replace(self.need, pristine=True), self._node.nodeid
            )
            if transition is not None:
                self._node.user_properties.append((TRANSITION_PROPERTY, transition.to_json()))
        else:
            start = min(job.offset for job in every)
            end = max(span(job, self._capacity)[1] for job in every)
            self._env.services.guard()
            self.dut.written.remove(start, end)
            discard(self.dut.identity, start, end - start, self.artifacts / "trim", self.machine)
        time.sleep(self.profile.seconds(self.profile.idle.between_tests_s))

    def _aggregate(self, name: str) -> None:
        runs = [m for m in self.measurements if m.name == name and "repeat" in m.workload]
        pooled = self._histograms.pop(name, {})
        self.derive(f"{name}.repeat", aggregate(runs, self._env.cv_max, pooled))

    def unwritten(self, fill: FioJob) -> tuple[FioJob, ...]:
        """``(fill,)`` when the span *fill* writes is not written yet on this device, else ``()``.

        Pass the answer as ``setup=`` so reads measure written data, not holes.
        Under ``--ssd-readonly`` nothing is written: reads measure the data as found.
        """
        if self.dut.readonly or self.dut.written.covers(*span(fill, self._capacity)):
            return ()
        return (fill,)

    @property
    def _capacity(self) -> int:
        return self.dut.identity.size_bytes

    def _prefill(self, setup: Sequence[FioJob], jobs: Sequence[FioJob]) -> tuple[FioJob, ...]:
        """Writes of what the reads among *jobs* would find unwritten, to run before them.

        A read of a never-written or deallocated LBA measures no drive: whatever a
        read addresses that the written map (and *setup*) leaves out is written
        first, sequentially, in the same fio process; the test's properties say so
        (``ssd.prefill``).  Under ``--ssd-readonly`` reads measure the data as found.
        """
        if self.dut.readonly:
            return ()
        known = WrittenMap(list(self.dut.written.intervals))
        for job in setup:
            known.note(job, self._capacity)
        gaps: list[tuple[int, int]] = []
        for job in jobs:
            if job.read_pct > 0:
                for gap in known.missing(*span(job, self._capacity)):
                    gaps.append(gap)
                    known.add(*gap)
        if not gaps:
            return ()
        fills = tuple(prefill_job(f"prefill-{n}", a, b) for n, (a, b) in enumerate(gaps, 1))
        why = "reads measure only LBAs written since the last purge"
        spans = [list(gap) for gap in gaps]
        total = sum(b - a for a, b in gaps)
        self.note("ssd.prefill", {"bytes": total, "spans": spans, "why": why})
        shown = ", ".join(f"[{a:,}, {b:,})" for a, b in gaps)
        text = f"prefilled {binary_size(total)} before the read ({shown}): {why}"
        self._node.stash.setdefault(FIGURES_KEY, []).append(
            extras.html(f"<p>{html.escape(text)}</p>")
        )
        return fills

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
            self._node.user_properties.append(("ssd.throttling", f"{name}: {flag}"))

    def _note_written(self, job: FioJob) -> None:
        """A write that covered its span adds it to the device's written map."""
        self.dut.written.note(job, self._capacity)

    def record(self, fio_run: FioRun, *jobs: FioJob) -> None:
        """Record *jobs* of a run made with ``record=False`` (say, the last of many rounds)."""
        for job in jobs:
            self._record(job, fio_run)

    def _record(self, job: FioJob, fio_run: FioRun, repeat: int | None = None) -> None:
        result = fio_run.result(job)
        workload = job.as_dict() if repeat is None else {**job.as_dict(), "repeat": repeat}
        # what the measurement's series needs beside the job (pytest_ssd.results.history)
        workload[STATE_KEY] = str(self.need.state) if self.need is not None else None
        workload[PROFILE_KEY] = self.profile.name
        if self._cpus is not None:  # the machine's CPUs busy during the run, fio's and others'
            workload[HOST_CPUS] = self._cpus
        measurement = Measurement(
            test=self._node.nodeid,
            device=self.dut.id,
            name=job.name,
            workload=workload,
            metrics={d: r.as_dict() for d, r in result.directions.items()},
            start=iso(fio_run.started),
            end=iso(fio_run.ended),
            artifacts=str(fio_run.artifacts.relative_to(self._env.run_dir)),
        )
        self.measurements.append(measurement)
        for direction, done in result.directions.items():
            if done.clat is not None and done.clat.bins:
                ns, count = zip(*sorted(done.clat.bins), strict=True)
                meta: dict[str, Any] = {
                    "kind": "clat-histogram",
                    "measurement": job.name,
                    "direction": direction,
                    "unit": "ns",
                }
                name = f"{job.name}.clat-{direction}"
                if repeat is None:
                    self.series(name, meta, ns=ns, count=count)
                else:  # a file each: the repeats' histograms are pooled, none replaces another
                    meta["repeat"] = repeat
                    runs = self._histograms.setdefault(job.name, {}).setdefault(direction, [])
                    runs.append(done.clat.bins)
                    self._keep(name, meta, f"{name}.repeat{repeat}", {"ns": ns, "count": count})
        props = self._node.user_properties
        props.append((PROPERTY, measurement.to_json()))
        props.extend(
            (f"{job.name}.{key}", value) for key, value in measurement.key_metrics().items()
        )

    def figure(self, fig: Figure, title: str) -> Path:
        """Attach *fig* to the test's row in the report and save it as PNG and SVG.

        The figure is drawn where the test runs (an xdist worker loads matplotlib for it);
        :meth:`plot` draws on the controller instead.
        """
        from pytest_ssd import figures  # noqa: PLC0415  # matplotlib only when a test draws

        rendered = figures.render_for_test(fig)
        png = rendered.save(self.artifacts, title)
        extra = extras.png(rendered.png_base64, title)
        self._node.stash.setdefault(FIGURES_KEY, []).append(extra)
        return png

    def plot(self, kind: str, measurement: Measurement, title: str) -> Path:
        """The figure *kind* of *measurement*, drawn on the controller.

        Like :meth:`figure`, without matplotlib in the process that runs the test: the
        measurement travels on the test's report and the controller draws it, attaches it
        to the test's row and saves it as PNG and SVG.  Returns the PNG's path, written
        once the test's report reaches the controller.  *kind* is ``latency_percentiles``
        or one a method or plugin declares (``pytest_ssd_figure_kinds``).
        """
        kinds = figure_kinds(self._node.config.hook.pytest_ssd_figure_kinds, GENERIC_KINDS)
        if kind not in kinds:
            raise ConfigError(f"ssd.plot: no figure {kind!r} (one of: {', '.join(sorted(kinds))})")
        self._node.stash.setdefault(FIGURES_KEY, []).append(
            {
                "format_type": PLOT_EXTRA,
                "builder": kind,
                "measurement": measurement.to_json(),
                "name": title,
                "folder": str(self.artifacts),
            }
        )
        return self.artifacts / f"{file_stem(title)}.png"

    def note(self, key: str, value: object) -> None:
        """Record a plain property on the test (shows in junitxml and the report)."""
        text = json.dumps(value) if isinstance(value, dict | list) else value
        self._node.user_properties.append((key, text))

    @property
    def datasheet(self) -> Datasheet | None:
        """The datasheet this device is checked against (``--datasheet`` or a match)."""
        return self._env.datasheet

    def spec(self, line_id: str) -> SpecLine | None:
        """A line of the device's datasheet by id; None without a datasheet.

        Raises :class:`ConfigError` when the datasheet has no such line.
        """
        sheet = self.datasheet
        if sheet is None:
            return None
        found = next((line for line in sheet.specs if line.id == line_id), None)
        if found is None:
            from pytest_ssd.specs.check import unknown_line  # noqa: PLC0415

            raise ConfigError(unknown_line(line_id, sheet))
        return found

    def check_spec(self, line: SpecLine | str, result: JobResult) -> Verdict | None:
        """Check fio's *result* against a datasheet line (a :class:`SpecLine` or its id).

        The figure is read through the line's own measure (:func:`specs.measured`):
        its direction, its unit, its percentile.  The verdict goes to the conformance
        table: met, not met, not judged (a percentile the sample cannot resolve), or
        not checked (the device has no datasheet: None is returned).
        """
        spec = self.spec(line) if isinstance(line, str) else line
        sheet = self.datasheet
        where: dict[str, object] = {
            "test": self._node.nodeid,
            "device": self.dut.id,
            "datasheet": str(sheet.path) if sheet else None,
        }
        if spec is None:
            row = {**where, **NOT_CHECKED, "id": line, "line": line}
            self._node.user_properties.append((SPEC_PROPERTY, json.dumps(row, sort_keys=True)))
            return None
        from pytest_ssd.specs import SpecCheck, measured  # noqa: PLC0415  # a spec line's test

        verdict = SpecCheck(spec, self.dut.identity.size_bytes).evaluate(measured(spec, result))
        row = {**where, **verdict.as_dict()}
        self._node.user_properties.append((SPEC_PROPERTY, json.dumps(row, sort_keys=True)))
        return verdict

    def assert_meets_spec(self, line: SpecLine | str, result: JobResult) -> Verdict | None:
        """:meth:`check_spec`, then fail the test unless the line is met.

        Not met: the test fails with the ratio message.  Not judged: under the full
        profile, whose sample sizes must resolve the figure, the test fails; under
        quick it is skipped with the reason.  Not checked (no datasheet): passes.
        """
        verdict = self.check_spec(line, result)
        if verdict is None:
            return None
        if verdict.status == "not met":
            pytest.fail(verdict.message, pytrace=False)
        if verdict.status == "not judged":
            if self.profile.quick:
                pytest.skip(f"{verdict.message} (the quick profile's sample is small)")
            pytest.fail(verdict.message, pytrace=False)
        return verdict

    def series(self, name: str, meta: dict[str, Any] | None = None, **arrays: ArrayLike) -> Path:
        """Keep named arrays (a bandwidth log, a histogram ...) with the test's results.

        They are saved as ``<name>.npz`` in the test's artifacts and stored in the
        results database, where comparison graphs and ``pytest-ssd report`` find them.
        """
        return self._keep(name, meta or {}, name, arrays)

    def _keep(
        self, name: str, meta: dict[str, Any], stem: str, arrays: Mapping[str, ArrayLike]
    ) -> Path:
        """:meth:`series` into the artifacts' file ``<stem>.npz``."""
        self.artifacts.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in stem)
        path = self.artifacts / f"{safe}.npz"
        try:  # whole or not at all: a full folder leaves no empty .npz
            write_atomic(path, pack(arrays))
        except OSError as exc:
            raise storage_error(path, exc, "--ssd-report-dir") from None
        file = str(path.relative_to(self._env.run_dir))
        record = SeriesRecord(device=self.dut.id, name=name, meta=meta, file=file)
        self._node.user_properties.append((SERIES_PROPERTY, record.to_json()))
        return path

    def derive(self, name: str, values: dict[str, Any]) -> None:
        """Record metrics derived from measurements (cache size, trimmed means ...).

        They go to results.json (``derived``) and, flattened, to the test's properties.
        Values must be JSON: numbers, strings, lists, dicts (numpy arrays as ``.tolist()``).
        """
        record = Derived(test=self._node.nodeid, device=self.dut.id, name=name, values=values)
        self._node.user_properties.append((DERIVED_PROPERTY, record.to_json()))
        for key, value in values.items():
            if isinstance(value, int | float | str):
                self._node.user_properties.append((f"{name}.{key}", value))


#: the plugin marks a point with the datasheet lines it checks (``plugin.points``)
COVERS_MARKER = "ssd_covers"


def enter_state(bench: SsdBench, need: Need, meanwhile: Callable[[], None] | None = None) -> bool:
    """Bring the device to the state *bench*'s test declared; the transition goes on the test.

    True when a transition ran (the device was not in the state already).

    *meanwhile* runs while the device gets there, once *bench*'s layout is known: after
    the transition's last purge (:meth:`StateKeeper.bring`), or as the rest before a sweep
    begins; not at all when neither happens.
    """
    bench.need = need
    keeper = bench._env.keeper()
    if bench.dut.readonly and keeper.plan(need):
        pytest.skip(f"--ssd-readonly: reaching state {need.state} writes to {bench.dut.path}")

    def early(layout: Layout) -> None:
        bench._layout = layout
        if meanwhile is not None:
            meanwhile()

    transition, bench._layout = keeper.bring(need, bench._node.nodeid, early)
    node = bench._node
    sweep = f"{node.path}::{getattr(node, 'originalname', node.name)}@{need.state}/{need.phase}"
    rests = need.state.name in RESTING_STATES and keeper.used and keeper.sweep != sweep
    if transition is None and rests:  # before a measurement, not between a sweep's points
        if meanwhile is not None:
            meanwhile()
        time.sleep(bench.profile.seconds(bench.profile.idle.between_tests_s))
    keeper.used, keeper.sweep = True, sweep
    if transition is not None:
        bench._node.user_properties.append((TRANSITION_PROPERTY, transition.to_json()))
    return transition is not None


def leave_state(bench: SsdBench, passed: bool) -> None:
    """After the test: a declared ``leaves=`` state, or what a failed write did."""
    keeper = bench._env.kept()
    if keeper is not None:
        keeper.state.after_test(bench.need, bench._node.nodeid, passed)


def _cpus(
    before: CpuTimes | None, after: CpuTimes | None, results: Sequence[JobResult], wall: float
) -> dict[str, float] | None:
    """What a measurement records of its machine's CPUs (:func:`pytest_ssd.state.cpu.host_cpus`)."""
    from pytest_ssd.state.cpu import host_cpus  # noqa: PLC0415  # a measuring run's

    return host_cpus(before, after, results, wall)
