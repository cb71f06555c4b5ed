"""Run-wide state of pytest-ssd, kept in ``config.stash``.

The controller (or the only process, without xdist) creates the run folder,
attaches scratch devices, identifies every device and runs the safety guard
before a single test starts.  xdist workers get the resolved devices through
``workerinput`` and only identify them again.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import DriveRef, ResultsDb, RunWriter
from pytest_ssd.device import guard
from pytest_ssd.device.drive_class import (
    DriveClass,
    DriveClassName,
    IndirectionUnit,
    classify,
    indirection_unit,
)
from pytest_ssd.device.dut import DEFAULT_SCRATCH_SIZE, DutSpec, unique_ids
from pytest_ssd.device.identity import DeviceIdentity, binary_size, identify
from pytest_ssd.device.scratch import ScratchDevice, create, sweep_stale
from pytest_ssd.device.summary import DeviceSummary, summarize
from pytest_ssd.errors import DeviceError
from pytest_ssd.fio.engine import FIO_INSTALL_HINT
from pytest_ssd.health import Sampler, Source, find_source
from pytest_ssd.host import HostRecord, Tuner
from pytest_ssd.proc import which
from pytest_ssd.results import ResultsStore, runinfo
from pytest_ssd.specs.load import load_datasheet
from pytest_ssd.specs.model import Datasheet
from pytest_ssd.specs.selection import DatasheetOptions, assign, load_candidates, load_given
from pytest_ssd.state.keeper import StateKeeper
from pytest_ssd.state.profile import Profile, profile_for
from pytest_ssd.state.progress import Write
from pytest_ssd.state.speeds import SpeedBook
from pytest_ssd.state.steps import FOB
from pytest_ssd.state.tracker import DeviceState

WORKERINPUT_KEY = "pytest_ssd"
SCRATCH_BANNER = "these results describe no SSD"
SPEEDS_FILE = ".ssd-speeds.json"
DB_FILE = "results.sqlite"


def speed_key(identity: DeviceIdentity, scratch: bool) -> str:
    """Which measured rates apply to a device: scratch, its model and serial, else its path."""
    if scratch:
        return "scratch"
    if identity.serial:
        return f"{identity.model or 'unknown'} {identity.serial}"
    return identity.path


def default_label(dut: Dut, labels: tuple[str, ...], index: int) -> str:
    """``--dut-label`` for the index-th device, else model, capacity and firmware."""
    if index < len(labels):
        return labels[index]
    if dut.scratch:
        return f"scratch {binary_size(dut.identity.size_bytes)}"
    return dut.identity.label


@dataclass(frozen=True)
class Options:
    """The plugin's command-line options, validated."""

    duts: tuple[DutSpec, ...]
    confirm: tuple[str, ...]
    readonly: bool
    report_dir: Path
    #: None: quick on scratch devices, full on real ones
    profile: str | None
    purge: str | None
    idle: tuple[tuple[str, float], ...] = ()
    datasheets: DatasheetOptions = field(default_factory=DatasheetOptions)
    health_interval: float = 1.0
    repeat: int = 1
    cv_max: float = 0.05
    db: Path = Path("reports/results.sqlite")
    labels: tuple[str, ...] = ()
    compare: tuple[str, ...] = ()
    #: --dut-class, one per --dut in order (the rest guessed)
    classes: tuple[DriveClassName, ...] = ()
    #: --ssd-tune: METHOD §9's host settings for the session, restored afterwards
    tune: bool = False

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        duts = tuple(config.getoption("ssd_dut") or ()) or (
            DutSpec(raw="scratch", scratch_size=DEFAULT_SCRATCH_SIZE),
        )
        report_dir = Path(config.getoption("ssd_report_dir")).absolute()
        db = config.getoption("ssd_db")
        labels = tuple(config.getoption("ssd_label") or ())
        if len(labels) > len(duts):
            raise pytest.UsageError(
                f"--dut-label given {len(labels)} times for {len(duts)} device(s): one per --dut"
            )
        classes = tuple(config.getoption("ssd_class") or ())
        if len(classes) > len(duts):
            raise pytest.UsageError(
                f"--dut-class given {len(classes)} times for {len(duts)} device(s): one per --dut"
            )
        return cls(
            duts=duts,
            confirm=tuple(config.getoption("ssd_confirm") or ()),
            readonly=bool(config.getoption("ssd_readonly")),
            report_dir=report_dir,
            profile=config.getoption("ssd_profile"),
            purge=config.getoption("ssd_purge"),
            health_interval=float(config.getoption("ssd_health_interval")),
            repeat=int(config.getoption("ssd_repeat")),
            cv_max=float(config.getoption("ssd_cv_max")) / 100,
            idle=tuple(config.getoption("ssd_idle") or ()),
            datasheets=DatasheetOptions(
                files=tuple(Path(p) for p in config.getoption("ssd_datasheet") or ()),
                dirs=tuple(Path(p) for p in config.getoption("ssd_datasheet_dir") or ()),
                force=bool(config.getoption("ssd_datasheet_force")),
            ),
            db=Path(db).absolute() if db else report_dir / DB_FILE,
            labels=labels,
            compare=tuple(config.getoption("ssd_compare") or ()),
            classes=classes,
            tune=bool(config.getoption("ssd_tune", False)),
        )


@dataclass
class Dut:
    """A device under test, resolved: its path, identity and what it may be used for."""

    id: str
    path: Path
    identity: DeviceIdentity
    scratch: bool
    readonly: bool
    note: str = ""
    #: bytes from the start of the device known to hold written data (prefill)
    written: int = 0
    #: the DUT summary (controller only: workers do not need it)
    summary: DeviceSummary | None = None
    #: the name of its results in the database and on graphs (--dut-label)
    label: str = ""
    #: its class (--dut-class or the guess) and indirection unit: which suites and writes apply
    drive_class: DriveClass | None = None
    iu: IndirectionUnit | None = None

    def classify(self, classes: tuple[DriveClassName, ...], index: int) -> None:
        """Set the class (the index-th ``--dut-class``, else the guess) and the IU."""
        given = classes[index] if index < len(classes) else None
        self.drive_class = classify(self.identity, self.scratch, given)
        self.iu = indirection_unit(self.identity)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "scratch": self.scratch,
            "readonly": self.readonly,
            "note": self.note,
            "label": self.label,
            "identity": self.identity.as_dict(),
            "summary": self.summary.as_dict() if self.summary else None,
            "summary_tables": self.summary.tables() if self.summary else None,
            "drive_class": self.drive_class.as_dict() if self.drive_class else None,
            "iu": self.iu.as_dict() if self.iu else None,
        }


@dataclass
class SsdSession:
    """Everything pytest-ssd knows about the run; one per process."""

    options: Options
    run_id: str
    run_dir: Path
    worker: bool
    duts: dict[str, Dut] = field(default_factory=dict)
    scratch: list[ScratchDevice] = field(default_factory=list)
    store: ResultsStore | None = None
    db: RunWriter | None = None
    #: earlier drives from the database drawn on comparison graphs (--ssd-compare)
    compared: list[DriveRef] = field(default_factory=list)
    keepers: dict[str, StateKeeper] = field(default_factory=dict)
    progress: Write | None = None
    #: device id -> its health source (or None) and what it is, or why there is none
    health_sources: dict[str, tuple[Source | None, str]] = field(default_factory=dict)
    #: device id -> the datasheet its measurements are checked against
    datasheets: dict[str, Datasheet] = field(default_factory=dict)
    #: the host's settings: read, tuned with --ssd-tune and put back (controller only)
    tuner: Tuner | None = None
    host: HostRecord | None = None

    @property
    def dut_ids(self) -> list[str]:
        return unique_ids(list(self.options.duts))

    @classmethod
    def for_controller(cls, config: pytest.Config) -> SsdSession:
        options = Options.from_config(config)
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        return cls(options, run_id, options.report_dir / run_id, worker=False)

    @classmethod
    def for_worker(cls, config: pytest.Config) -> SsdSession:
        data = config.workerinput[WORKERINPUT_KEY]  # type: ignore[attr-defined]
        session = cls(Options.from_config(config), data["run_id"], Path(data["run_dir"]), True)
        for index, item in enumerate(data["duts"]):
            path = Path(item["path"])
            session.duts[item["id"]] = Dut(
                item["id"], path, identify(path), item["scratch"], item["readonly"], item["note"]
            )
            session.duts[item["id"]].classify(session.options.classes, index)
        for dut_id, sheet in data.get("datasheets", {}).items():
            session.datasheets[dut_id] = load_datasheet(sheet)
        return session

    def workerinput(self) -> dict[str, Any]:
        duts = [
            {"id": d.id, "path": str(d.path), "scratch": d.scratch, "readonly": d.readonly,
             "note": d.note}
            for d in self.duts.values()
        ]  # fmt: skip
        sheets = {dut_id: str(d.path) for dut_id, d in self.datasheets.items()}
        return {"run_id": self.run_id, "run_dir": str(self.run_dir), "duts": duts,
                "datasheets": sheets}  # fmt: skip

    def open(self, args: list[str]) -> None:
        """Create the run folder, attach scratch devices, identify and guard every device.

        Datasheets are read first: a bad one stops the run before a device is touched.
        """
        # first of all: put back what a session that died left tuned
        self.tuner = Tuner(self.options.report_dir, self.options.tune)
        self.tuner.recover()
        which("fio", FIO_INSTALL_HINT)  # before anything is created: every test needs fio
        given = load_given(self.options.datasheets, len(self.options.duts))
        candidates = () if given else load_candidates(self.options.datasheets)
        if self.options.compare:  # a name that is not in the database stops the run here
            with ResultsDb(self.options.db) as db:
                self.compared = db.resolve(self.options.compare)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._link_latest()
        sweep_stale(self.options.report_dir / ".scratch")
        for dut_id, spec in zip(self.dut_ids, self.options.duts, strict=True):
            dut = self._resolve(dut_id, spec, len(self.scratch))
            dut.summary = summarize(dut.identity)
            dut.classify(self.options.classes, len(self.duts))
            dut.label = default_label(dut, self.options.labels, len(self.duts))
            self.duts[dut_id] = dut
        identities = {dut_id: dut.identity for dut_id, dut in self.duts.items()}
        # the record says what the run measures under: after --ssd-tune, with every device
        self.host = self.tuner.start(identities)
        environment = runinfo.collect(args, self.host)
        self.store = ResultsStore(self.run_dir, self.run_id, environment)
        self.store.write()
        self.db = RunWriter(self.options.db, self.run_id, self.run_dir, environment)
        force = self.options.datasheets.force
        self.datasheets = assign(identities, given, candidates, force)
        for dut_id, dut in self.duts.items():
            sheet = self.datasheets.get(dut_id)
            health = self.sampler(dut)
            description = {
                **dut.describe(),
                "datasheet": str(sheet.path) if sheet else None,
                "health": health.source.name if health.source else health.reason,
            }
            self.store.add_device(dut_id, description)
            self.db.add_device(dut_id, description, dut.label)

    def _resolve(self, dut_id: str, spec: DutSpec, index: int) -> Dut:
        if spec.scratch_size is not None:
            device = create(spec.scratch_size, self.options.report_dir / ".scratch", index)
            self.scratch.append(device)
            identity = identify(device.path)
            return Dut(dut_id, device.path, identity, True, self.options.readonly, device.note)
        assert spec.path is not None
        facts = guard.check_readable(spec.path)
        identity = identify(spec.path)
        if identity.size_bytes <= 0:
            hint = (
                "give it a size first, e.g. 'fallocate -l 4G FILE'"
                if facts.kind == "file"
                else "is a medium inserted?"
            )
            raise DeviceError(f"{spec.path} has no capacity (0 bytes): {hint}")
        if not self.options.readonly:
            guard.check_writable(spec.path)
            guard.check_confirmation(
                str(spec.path), identity.summary(), identity.confirm_token, self.options.confirm
            )
        return Dut(dut_id, spec.path, identity, False, self.options.readonly)

    def profile(self, dut: Dut) -> Profile:
        """The profile for *dut*: the option's, else quick on scratch and full on real devices."""
        return profile_for(self.options.profile, dut.scratch, self.options.idle)

    def sampler(self, dut: Dut) -> Sampler:
        """A health sampler for *dut* (inactive, with the reason, where it has no sensor)."""
        if dut.id not in self.health_sources:
            self.health_sources[dut.id] = find_source(dut.identity)
        source, what = self.health_sources[dut.id]
        interval = self.options.health_interval
        reason = what if source is None else ("" if interval else "--ssd-health-interval=0")
        return Sampler(source if interval else None, interval, reason)

    def guard_writes(self, dut: Dut) -> None:
        """Refuse (SafetyError) unless *dut* may be written now: the guard and --ssd-confirm."""
        guard.check_writable(dut.path)
        if not dut.scratch:
            identity = dut.identity
            guard.check_confirmation(
                str(dut.path), identity.summary(), identity.confirm_token, self.options.confirm
            )

    @property
    def speeds(self) -> SpeedBook:
        return SpeedBook.load(self.options.report_dir / SPEEDS_FILE)

    def keeper(self, dut_id: str) -> StateKeeper:
        """The state keeper of one device (created on first use, in the process running it)."""
        if dut_id not in self.keepers:
            dut = self.duts[dut_id]
            state = DeviceState(dut.identity.size_bytes, self.profile(dut))
            if dut.scratch:  # a new sparse file was never written: it is fresh out of the box
                state.establish(FOB)
            self.keepers[dut_id] = StateKeeper(
                dut_id, dut.path, dut.identity, state, self.run_dir / "states" / dut_id,
                lambda: self.guard_writes(dut), self.speeds, speed_key(dut.identity, dut.scratch),
                self.options.purge, self.progress, sampler=lambda: self.sampler(dut),
            )  # fmt: skip
        return self.keepers[dut_id]

    def _link_latest(self) -> None:
        latest = self.options.report_dir / "latest"
        with contextlib.suppress(FileNotFoundError):
            latest.unlink()
        latest.symlink_to(self.run_id)

    def close(self) -> None:
        """Restore tuned settings, release scratch devices; always called, also after Ctrl-C."""
        if self.tuner is not None:
            self.tuner.restore()
        while self.scratch:
            self.scratch.pop().release()

    def artifacts_for(self, nodeid: str) -> Path:
        """The test's artifact folder under the run directory."""
        safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in nodeid)
        return self.run_dir / "artifacts" / safe[:200]


SESSION_KEY = pytest.StashKey[SsdSession]()


def get(config: pytest.Config) -> SsdSession:
    return config.stash[SESSION_KEY]
