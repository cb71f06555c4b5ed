"""Run-wide state of pytest-ssd, kept in ``config.stash``.

The controller (or the only process, without xdist) creates the run folder,
attaches scratch devices, identifies every device and runs the safety guard
before a single test starts.  xdist workers get the resolved devices through
``workerinput`` and only identify them again.

:class:`SsdSession` orchestrates what the parts do: the devices
(:mod:`.devices`: resolution, guard, locks, each device's services on its site),
the run store (:mod:`.store`: the run folder, the database, results.json) and
the host environment (:mod:`.environment`: each machine's settings).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ssd.db.runid import new_run_id
from pytest_ssd.errors import present
from pytest_ssd.extensions import Extensions
from pytest_ssd.fio.job import FIO_INSTALL_HINT
from pytest_ssd.fio.watch import stall_override
from pytest_ssd.health.log import find_log_reader
from pytest_ssd.health.profile import default_profile
from pytest_ssd.health.watch import HealthWatch
from pytest_ssd.proc import which
from pytest_ssd.proc.sweep import SessionMark
from pytest_ssd.results import runinfo
from pytest_ssd.session.choices import Options
from pytest_ssd.session.devices import PURGE_NAMES, Devices, speed_key
from pytest_ssd.session.environment import HostEnvironment
from pytest_ssd.session.resume import SHAPE_KEY, UNKNOWN_STATE, ArgvShape, Resumed
from pytest_ssd.session.store import RunStore
from pytest_ssd.site import DeviceSite, Dut
from pytest_ssd.state.keeper import StateKeeper
from pytest_ssd.state.profile import Profile, profile_for
from pytest_ssd.state.progress import Write
from pytest_ssd.state.speeds import SpeedBook
from pytest_ssd.state.steps import FOB
from pytest_ssd.state.tracker import DeviceState
from pytest_ssd.steady import FioSteadyState, SniaVerdict

if TYPE_CHECKING:
    # a worker never opens the database (the controller records the run): not its modules
    from pytest_ssd.db import DriveRef
    from pytest_ssd.db.export import ResultsExport
    from pytest_ssd.db.lab import RunRecords
    from pytest_ssd.device.udev.events import DeviceEvents
    from pytest_ssd.host import HostRecord
    from pytest_ssd.host.tune import Tuner

    # and loads the datasheet machinery only when its device has a datasheet
    from pytest_ssd.specs.model import Datasheet

__all__ = [
    "PURGE_NAMES",
    "SESSION_KEY",
    "WORKERINPUT_KEY",
    "Dut",
    "Options",
    "SsdSession",
    "get",
    "speed_key",
]

WORKERINPUT_KEY = "pytest_ssd"
SPEEDS_FILE = ".ssd-speeds.json"


@dataclass
class SsdSession:
    """Everything pytest-ssd knows about the run; one per process."""

    options: Options
    run_id: str
    run_dir: Path
    worker: bool
    #: what suites and plugins added through pytest-ssd's hooks
    extensions: Extensions = field(default_factory=Extensions)
    #: what the user should know about the run (shown in the terminal header)
    warnings: list[str] = field(default_factory=list)
    devices: Devices = field(init=False)
    run_store: RunStore = field(init=False)
    environment: HostEnvironment = field(init=False)
    keepers: dict[str, StateKeeper] = field(default_factory=dict)
    progress: Write | None = None
    #: device id -> the datasheet its measurements are checked against
    datasheets: dict[str, Datasheet] = field(default_factory=dict)
    #: every process the session starts carries it; what is left at the end is ended
    mark: SessionMark = field(default_factory=SessionMark)
    #: device id -> its health log across tests (created on first use)
    health_watches: dict[str, HealthWatch] = field(default_factory=dict)
    #: the run this session continues (--ssd-resume), None for a new run
    resumed: Resumed | None = None
    #: the kernel's events of the devices, watched in the process that runs their tests
    events: DeviceEvents | None = None
    #: device id -> the test a fault of the device's events failed (the one running then)
    blamed: dict[str, str] = field(default_factory=dict)
    #: the datasheets given and the candidates (:meth:`prepare`), assigned to the devices
    _sheets: tuple[tuple[Datasheet, ...], tuple[Datasheet, ...]] = field(
        default=((), ()), init=False, repr=False
    )

    def __post_init__(self) -> None:
        options = self.options
        recorded = self.resumed.ids_by_drive() if self.resumed is not None else {}
        self.devices = Devices(options, self.extensions, warnings=self.warnings, recorded=recorded)
        self.run_store = RunStore(
            options.report_dir,
            options.db,
            self.run_id,
            self.run_dir,
            self.warnings,
            resuming=self.resumed is not None,
        )
        self.environment = HostEnvironment(self.devices.sites.of(None).machine, options.tune)

    @classmethod
    def for_controller(
        cls, options: Options, extensions: Extensions, argv_shape: ArgvShape | None = None
    ) -> SsdSession:
        """A new run, or the run --ssd-resume or --ssd-run-id names (ConfigError when it cannot
        be resumed; *argv_shape* reads the options of a run that recorded only its command
        line); --ssd-run-id of a run the database does not have: a new run of that id."""
        resumed = None
        if options.resume is not None:
            resumed = Resumed.load(options.db, options.resume, options.shape, argv_shape)
        elif options.run_id is not None:  # resumed when the database has it, else a new run
            run_dir = options.report_dir / options.run_id
            resumed = Resumed.given(options.db, run_dir, options.shape, argv_shape)
        if resumed is not None:
            return cls(options, resumed.run_id, resumed.run_dir, False, extensions, resumed=resumed)
        run_id = options.run_id or new_run_id()
        return cls(options, run_id, options.report_dir / run_id, False, extensions)

    @classmethod
    def for_worker(
        cls, options: Options, data: dict[str, Any], extensions: Extensions
    ) -> SsdSession:
        """A worker's session: the devices the controller resolved (:meth:`workerinput`)."""
        resumed = Resumed.from_workerinput(data["resumed"]) if data.get("resumed") else None
        session = cls(
            options, data["run_id"], Path(data["run_dir"]), True, extensions, resumed=resumed
        )
        session.devices.adopt(data["duts"], data["hosts"])  # all at once: mostly a host's answers
        sheets = data.get("datasheets", {})
        if sheets:
            from pytest_ssd.specs.load import load_datasheet  # noqa: PLC0415

            for dut_id, sheet in sheets.items():
                session.datasheets[dut_id] = load_datasheet(sheet)
        session.watch_events()
        return session

    def workerinput(self) -> dict[str, Any]:
        sheets = {dut_id: str(d.path) for dut_id, d in self.datasheets.items()}
        return {
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "duts": self.devices.workerinput(),
            "datasheets": sheets,
            "controller_pid": os.getpid(),
            "hosts": self.devices.sites.machines.shared(),
            "resumed": self.resumed.workerinput() if self.resumed is not None else None,
        }

    @property
    def dut_ids(self) -> list[str]:
        return self.devices.ids

    @property
    def duts(self) -> dict[str, Dut]:
        return self.devices.duts

    def services(self, dut_id: str) -> DeviceSite:
        """The services of device *dut_id* on its machine (its keeper's and its tests')."""
        return self.devices.services[dut_id]

    @property
    def db(self) -> RunRecords | None:
        return self.run_store.db

    @property
    def compared(self) -> list[DriveRef]:
        """Earlier drives from the database drawn on comparison graphs (--ssd-compare)."""
        return self.run_store.compared

    @property
    def store(self) -> ResultsExport | None:
        """results.json, exported from the database."""
        return self.run_store.export

    @property
    def host(self) -> HostRecord | None:
        return self.environment.record

    def open(self, args: list[str]) -> None:
        """Create the run folder, attach scratch devices, identify and guard every device.

        Datasheets are read first: a bad one stops the run before a device is touched.
        """
        self.prepare()
        try:
            self.open_devices()
            self.start_run(args)
            self.watch_events()
        except BaseException:
            self.close()  # devices unlocked, scratch released, settings back
            raise

    def prepare(self) -> None:
        """What comes before the devices, all on this machine: the session's mark, fio,
        recovery, the datasheets and the drives to compare with (a refusal here has
        touched no device)."""
        # released at exit too: pytest skips its unconfigure when a sessionfinish hook raises
        # (a closed pipe: `pytest ... | tee log` after Ctrl-C)
        atexit.register(self.close)
        stall_override()  # a bad value is refused before anything starts
        self.mark.open()  # from here on, no process of the session outlives it
        which("fio", FIO_INSTALL_HINT)  # before anything is created: every test needs fio
        # then first of all: put back what a session that died left tuned (its lock and
        # journal are commands the machine runs, as on a test host: a PATH without fio
        # may lack them too, and fio's missing is the line to give)
        self.environment.recover()
        # the controller's (a worker is handed its datasheets)
        from pytest_ssd.specs.selection import load_candidates, load_given  # noqa: PLC0415

        given = load_given(self.options.datasheets, len(self.options.duts))
        self._sheets = (given, () if given else load_candidates(self.options.datasheets))
        self.run_store.check()  # the database the run is recorded into, before its folder
        self.run_store.compare(self.options.compare)
        # before pytest-html makes the run folder (under -n, at configure): was it there?
        self.devices.sweep()

    def open_devices(self) -> None:
        """Resolve, lock, guard and identify every device, give each its datasheet and record
        every machine's settings (tuned with ``--ssd-tune``): mostly waits on test hosts, so
        under xdist it runs while the workers start (:mod:`.handoff`).  Nothing is written
        in the report folder but scratch devices.  After a refusal, :meth:`close` puts
        everything back (the caller's: not from a thread while xdist starts workers)."""
        from pytest_ssd.specs.selection import assign  # noqa: PLC0415

        self.devices.resolve()
        self.devices.check_health()
        self._check_resumed()  # the same drives, before anything is written
        identities = {dut_id: dut.identity for dut_id, dut in self.duts.items()}
        given, candidates = self._sheets
        force = self.options.datasheets.force
        self.datasheets = assign(identities, given, candidates, force)
        # the record says what the run measures under: after --ssd-tune, with every device
        self.environment.start(self.devices.tuning(), self.warnings)
        for dut_id in self.duts:  # each health log's reader, found on its machine
            self.health_watch(dut_id)
        from pytest_ssd.device.udev import events  # noqa: PLC0415  # a session opening devices

        machines = {id(m): m for m in (self.services(d).machine for d in self.duts)}
        self.warnings.extend(events.unoffered(machines.values()))

    def start_run(self, args: list[str]) -> None:
        """The run folder, the ``latest`` link, results.json and the database.

        A refused run leaves nothing: the run folder comes once every check has passed.
        """
        self.run_store.make_folder()
        host = present(self.environment.record, "the host record")
        described = {}
        for dut_id, dut in self.duts.items():
            sheet = self.datasheets.get(dut_id)
            health = self.services(dut_id).sampler()
            watch = self.health_watch(dut_id)
            description = {
                **dut.describe(),
                "datasheet": str(sheet.path) if sheet else None,
                "health": health.source.name if health.source else health.reason,
                "health_log": watch.reason,
                "health_rules": watch.profile.as_dict() if watch.reader else None,
            }
            described[dut_id] = (description, dut.label)
        # what a resumed run must match (a resumed run keeps the run's own record)
        environment = {**runinfo.collect(args, host), SHAPE_KEY: dict(self.options.shape)}
        self.run_store.start(environment, described)

    def watch_events(self) -> None:
        """Watch the devices' kernel events from here on (a machine that offers none is
        said in one line among the warnings)."""
        from pytest_ssd.device.udev import events  # noqa: PLC0415  # a process running tests

        watched = [
            events.Watched(
                dut_id, str(d.path), name, d.identity.size_bytes, self.services(dut_id).machine
            )
            for dut_id, d in self.duts.items()
            if (name := d.identity.kernel_name) is not None
        ]
        if watched:
            folder = self.run_dir / "events" / f"pid-{os.getpid()}"  # each xdist worker's
            self.events = events.start(watched, folder, self.warnings, events.stderr_line)

    def device_fault(self, dut_id: str) -> str | None:
        """What the kernel said happened to device *dut_id* this session (None: nothing)."""
        return self.events.fault(dut_id) if self.events is not None else None

    def blame(self, dut_id: str, nodeid: str) -> bool:
        """Whether test *nodeid* is the one device *dut_id*'s fault fails (the first to end
        after it; a later one is refused before it starts)."""
        return self.blamed.setdefault(dut_id, nodeid) == nodeid

    def _check_resumed(self) -> None:
        """A resumed run's devices are the drives it measured; say what is kept and why."""
        if self.resumed is None:
            return
        identities = {dut_id: dut.identity for dut_id, dut in self.duts.items()}
        scratch = {dut_id for dut_id, dut in self.duts.items() if dut.scratch}
        notes = self.resumed.check_devices(identities, scratch)
        kept = len(self.resumed.kept)
        self.warnings.append(
            f"resuming run {self.run_id}: {kept} test(s) it finished are kept as recorded"
            f" ({self.resumed.saved()} not spent again); {UNKNOWN_STATE}"
        )
        self.warnings.extend(notes)

    def profile(self, dut: Dut) -> Profile:
        """The profile for *dut*: the option's, else quick on scratch and full on real devices."""
        return profile_for(self.options.profile, dut.scratch, self.options.idle)

    def profile_of(self, dut_id: str) -> Profile:
        """The profile of device *dut_id*, known before it is opened (``--collect-only``)."""
        spec = dict(zip(self.dut_ids, self.options.duts, strict=True))[dut_id]
        return profile_for(self.options.profile, spec.is_scratch, self.options.idle)

    @property
    def speeds(self) -> SpeedBook:
        return SpeedBook.load(self.options.report_dir / SPEEDS_FILE)

    def health_watch(self, dut_id: str) -> HealthWatch:
        """Device *dut_id*'s health log and its rules: ``--ssd-health-profile``, else its
        datasheet's ``[health]``, else the shipped default."""
        if dut_id not in self.health_watches:
            sheet = self.datasheets.get(dut_id)
            given = self.options.health_profile or (sheet.health if sheet else None)
            machine = self.services(dut_id).machine
            reader, what = find_log_reader(self.duts[dut_id].identity, machine)
            watch = HealthWatch(reader, what, given or default_profile())
            self.health_watches[dut_id] = watch
        return self.health_watches[dut_id]

    def keeper(self, dut_id: str) -> StateKeeper:
        """The state keeper of one device (created on first use, in the process running it)."""
        if dut_id not in self.keepers:
            dut = self.duts[dut_id]
            state = DeviceState(dut.identity.size_bytes, self.profile(dut))
            if dut.scratch:  # a new sparse file was never written: it is fresh out of the box
                state.establish(FOB)
            folder = self.run_dir / "states" / dut_id
            self.keepers[dut_id] = StateKeeper(
                device=dut_id,
                target=dut.path,
                identity=dut.identity,
                state=state,
                folder=folder,
                # a resumed run numbers its transitions after those the run made before
                transitions=len(list(folder.iterdir())) if folder.is_dir() else 0,
                services=self.services(dut_id),
                speeds=self.speeds,
                speed_key=speed_key(dut.identity, dut.scratch),
                purge_method=self.options.purge,
                progress=self.progress,
                written=dut.written,
                charts=_save_charts,
                added_purges=self.extensions.purge_methods,
            )
        return self.keepers[dut_id]

    def close(self) -> None:
        """Restore tuned settings, unlock devices, release scratch; always called, also after
        Ctrl-C, and safe to call twice.  Each step runs even when one before it fails."""
        with contextlib.ExitStack() as stack:  # its callbacks run last pushed, first
            stack.callback(atexit.unregister, self.close)
            stack.callback(self._stop_leftovers)
            stack.callback(self.devices.release_scratch)
            stack.callback(self.close_hosts)
            stack.callback(self.environment.restore)

    def _stop_leftovers(self) -> None:
        for pid, name in self.mark.close():
            sys.stderr.write(f"pytest-ssd: stopped {name} (pid {pid}), left running by the run\n")

    def tuners(self) -> list[Tuner]:
        """Each machine's tuner (the controller's; none on workers)."""
        return self.environment.tuners()

    def close_hosts(self) -> None:
        """Stop this process's fio servers on test hosts, unlock, disconnect; say what was left."""
        if self.events is not None:  # its udevadm on a host ends with the connection
            self.events.close()
            self.events = None
        for problem in self.devices.close():
            sys.stderr.write(f"pytest-ssd: {problem}\n")

    def lost_host(self, said: str) -> str | None:
        """A test host whose connection this process opened ended, in one line (None: none);
        *said*: a failed test's report (the hosts it names are given a moment)."""
        return self.devices.sites.machines.lost(said)

    def artifacts_for(self, nodeid: str) -> Path:
        """The test's artifact folder under the run directory."""
        safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in nodeid)
        return self.run_dir / "artifacts" / safe[:200]


SESSION_KEY = pytest.StashKey[SsdSession]()


def get(config: pytest.Config) -> SsdSession:
    return config.stash[SESSION_KEY]


def _save_charts(
    verdict: FioSteadyState | SniaVerdict, folder: Path, quantity: str, unit: str
) -> tuple[str, ...]:
    """:func:`pytest_ssd.figures.steady.save_charts`, loaded when a steady state is drawn.

    A worker that reaches no steady state never loads matplotlib.
    """
    from pytest_ssd.figures.steady import save_charts  # noqa: PLC0415  # matplotlib

    return save_charts(verdict, folder, quantity, unit)
