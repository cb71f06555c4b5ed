"""Run-wide state of pytest-ssd, kept in ``config.stash``.

The controller (or the only process, without xdist) creates the run folder,
attaches scratch devices, identifies every device and runs the safety guard
before a single test starts.  xdist workers get the resolved devices (and their
identities) through ``workerinput``, and the controller's connections to test hosts.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import pickle
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import DriveRef, ResultsDb, RunWriter
from pytest_ssd.db.export import ResultsExport
from pytest_ssd.device import guard
from pytest_ssd.device.drive_class import (
    DriveClass,
    DriveClassName,
    IndirectionUnit,
    classify,
    indirection_unit,
)
from pytest_ssd.device.dut import DEFAULT_SCRATCH_SIZE, MIN_SCRATCH_SIZE, DutSpec, unique_ids
from pytest_ssd.device.identity import DeviceIdentity, binary_size, identify
from pytest_ssd.device.in_order import Order, each, prepare
from pytest_ssd.device.node import DeviceLock, canonical, device_key
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.remote import SshView
from pytest_ssd.device.remote_identity import identify_remote
from pytest_ssd.device.remote_links import sysfs_copy
from pytest_ssd.device.scratch import ScratchDevice, create, free_bytes, sweep_stale
from pytest_ssd.device.summary import DeviceSummary, summarize
from pytest_ssd.device.view import LocalView, Node, View
from pytest_ssd.errors import ConfigError, DeviceError, SafetyError, SsdError, present
from pytest_ssd.extensions import Extensions
from pytest_ssd.fio.engine import FIO_INSTALL_HINT
from pytest_ssd.fio.job import fio_path
from pytest_ssd.fio.server import FioServer
from pytest_ssd.fio.watch import stall_override
from pytest_ssd.health import Sampler, Source, find_source
from pytest_ssd.host import HostRecord, Tuner
from pytest_ssd.host.remote_tune import HostTuner, combined, tune_hosts
from pytest_ssd.hosts import Hosts
from pytest_ssd.machine.address import SshAddress, parse_address
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.proc import which
from pytest_ssd.proc.sweep import SessionMark
from pytest_ssd.purge import PurgeMethod
from pytest_ssd.purge import choose as choose_purge
from pytest_ssd.purge.extra import pick as pick_purge
from pytest_ssd.results import runinfo
from pytest_ssd.results.files import storage_error
from pytest_ssd.results.location import DB_FILE, INI_OPTION
from pytest_ssd.results.location import report_dir as report_dir_of
from pytest_ssd.specs.load import load_datasheet
from pytest_ssd.specs.model import Datasheet
from pytest_ssd.specs.selection import DatasheetOptions, assign, load_candidates, load_given
from pytest_ssd.state.keeper import StateKeeper
from pytest_ssd.state.profile import Profile, profile_for
from pytest_ssd.state.progress import Write
from pytest_ssd.state.speeds import SpeedBook
from pytest_ssd.state.steps import FOB
from pytest_ssd.state.tracker import DeviceState
from pytest_ssd.state.written import WrittenMap
from pytest_ssd.steady import FioSteadyState, SniaVerdict

WORKERINPUT_KEY = "pytest_ssd"
#: what --ssd-purge takes of pytest-ssd's own methods (plugins may add more)
PURGE_NAMES = tuple(m.value for m in PurgeMethod)
SCRATCH_DIR = ".scratch"
LATEST = "latest"
_RUN_ID = re.compile(r"^\d{8}-\d{6}-\d+$")
SPEEDS_FILE = ".ssd-speeds.json"


#: the smallest target measured: the smallest workloads and states need this much
MIN_TARGET_SIZE = MIN_SCRATCH_SIZE


def _check_size(node: Path, size: int, kind: str | None) -> None:
    """Refuse an empty target, or one smaller than the smallest workload (before any confirm)."""
    if size <= 0:
        hint = (
            "give it a size first, e.g. 'fallocate -l 4G FILE'"
            if kind == "file"
            else ("is a medium inserted?")
        )
        raise DeviceError(f"{node} has no capacity (0 bytes): {hint}")
    if size < MIN_TARGET_SIZE:
        raise DeviceError(
            f"{node} holds {binary_size(size)}: pytest-ssd measures targets of at least"
            f" {binary_size(MIN_TARGET_SIZE)} (its smallest workloads need that); check the path"
        )


def key_now(found: Node) -> tuple[str, int, int]:
    """The key (:func:`~.node.device_key`) of a block device a test host's view found."""
    return ("block", os.major(found.rdev), os.minor(found.rdev))


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
    if dut.address is not None:
        return f"{dut.identity.label} on {dut.address.label}"
    return dut.identity.label


def _fio_safe(option: str, given: str | None, report_dir: Path) -> None:
    """Refuse a report folder fio could not be given: every test's logs and gates live in it.

    Checked before anything is touched (before, the first fio job with a log refused
    it, after the device had been purged).  Below it every name is made safe by
    construction: the run id, artifact folders from test ids (letters, digits, ``-_.=``),
    job names, and the batches' gates, given to fio relative to its working folder.
    """
    if given is not None and given != given.strip():
        raise pytest.UsageError(f"{option}={given!r} has blanks at its ends: remove them")
    try:
        fio_path(str(report_dir), filename=False)
    except ConfigError as exc:
        raise pytest.UsageError(f"{option}: {exc}") from None


def _ssh_config(text: str | None) -> Path | None:
    if text is None:
        return None
    path = Path(text).absolute()
    if not path.is_file():
        raise pytest.UsageError(f"--ssd-ssh-config={text}: no such file")
    return path


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
    #: --ssd-ssh-config: the ssh_config for test hosts (None: ~/.ssh/config)
    ssh_config: Path | None = None

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        duts = tuple(config.getoption("ssd_dut") or ()) or (
            DutSpec(raw="scratch", scratch_size=DEFAULT_SCRATCH_SIZE),
        )
        given = config.getoption("ssd_report_dir")
        report_dir = (
            Path(given).absolute()
            if given
            else report_dir_of(config.inipath, config.getini(INI_OPTION) or None, Path.cwd())
        )
        _fio_safe("--ssd-report-dir" if given else INI_OPTION, given, report_dir)
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
            ssh_config=_ssh_config(config.getoption("ssd_ssh_config", None)),
        )


@dataclass(kw_only=True)
class Dut:
    """A device under test, resolved: its path, identity and what it may be used for."""

    id: str
    path: Path
    identity: DeviceIdentity
    scratch: bool
    readonly: bool
    note: str = ""
    #: what holds data written since the last purge: reads read only that (prefill first)
    written: WrittenMap = field(default_factory=WrittenMap)
    #: the DUT summary (controller only: workers do not need it)
    summary: DeviceSummary | None = None
    #: the name of its results in the database and on graphs (--dut-label)
    label: str = ""
    #: its class (--dut-class or the guess) and indirection unit: which suites and writes apply
    drive_class: DriveClass | None = None
    iu: IndirectionUnit | None = None
    #: the test host it is in (None: this machine) and the pid holding its lock there
    address: SshAddress | None = None
    lock_pid: int | None = None
    #: the device locked and confirmed: every write checks the node still names it
    pinned: Pinned | None = None

    @property
    def claimed(self) -> frozenset[int]:
        """The device number the controller holds ``O_EXCL`` (a block device it writes)."""
        if self.readonly or self.pinned is None or self.pinned.key[0] != "block":
            return frozenset()
        return frozenset({os.makedev(self.pinned.key[1], self.pinned.key[2])})

    def classify(
        self, classes: tuple[DriveClassName, ...], index: int, extensions: Extensions
    ) -> None:
        """Set the class and the IU: the index-th ``--dut-class``, a plugin's, else the guess."""
        given = classes[index] if index < len(classes) else None
        added = None if given or self.scratch else extensions.drive_class(self.identity)
        self.drive_class = added or classify(self.identity, self.scratch, given)
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
            "host": self.address.label if self.address else None,
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
    #: results.json, exported from the database
    store: ResultsExport | None = None
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
    #: each test host's settings, the same way (controller only)
    host_tuners: list[HostTuner] = field(default_factory=list)
    host: HostRecord | None = None
    #: the session's locks on its devices (controller only): one session per device
    locks: list[DeviceLock] = field(default_factory=list)
    #: what the user should know about the run folder (shown in the terminal header)
    warnings: list[str] = field(default_factory=list)
    #: the report folder did not exist before this session (it may remove it, left empty)
    made_report_dir: bool = False
    #: what suites and plugins added through pytest-ssd's hooks
    extensions: Extensions = field(default_factory=Extensions)
    #: the test hosts of ssh:// devices: connections, locks, fio servers (this process's)
    hosts: Hosts = field(default_factory=Hosts)
    #: every process the session starts carries it; what is left at the end is ended
    mark: SessionMark = field(default_factory=SessionMark)

    @property
    def dut_ids(self) -> list[str]:
        return unique_ids(list(self.options.duts))

    @classmethod
    def for_controller(cls, config: pytest.Config, extensions: Extensions) -> SsdSession:
        options = Options.from_config(config)
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        return cls(
            options, run_id, options.report_dir / run_id, worker=False, extensions=extensions
        )

    @classmethod
    def for_worker(cls, config: pytest.Config, extensions: Extensions) -> SsdSession:
        data = config.workerinput[WORKERINPUT_KEY]  # type: ignore[attr-defined]
        session = cls(
            Options.from_config(config),
            data["run_id"],
            Path(data["run_dir"]),
            True,
            extensions=extensions,
        )
        session.hosts.config = session.options.ssh_config
        session.hosts.join(data["hosts"])  # the controller's connections: no login of its own
        # the controller's identification, not one per worker: 16 workers on a host read
        # nothing there at start; every write still checks the node names the device pinned
        for index, item in enumerate(data["duts"]):
            address = SshAddress(**item["address"]) if item["address"] else None
            session.duts[item["id"]] = Dut(
                id=item["id"],
                path=Path(item["path"]),
                identity=pickle.loads(item["identity"]),  # our own controller's
                scratch=item["scratch"],
                readonly=item["readonly"],
                note=item["note"],
                address=address,
                lock_pid=item["lock_pid"],
                pinned=Pinned.from_dict(item["pinned"]) if item["pinned"] else None,
            )
            session.duts[item["id"]].classify(session.options.classes, index, extensions)
        for dut_id, sheet in data.get("datasheets", {}).items():
            session.datasheets[dut_id] = load_datasheet(sheet)
        return session

    def workerinput(self) -> dict[str, Any]:
        duts = [
            {
                "id": d.id,
                "path": str(d.path),
                "scratch": d.scratch,
                "readonly": d.readonly,
                "note": d.note,
                "address": dataclasses.asdict(d.address) if d.address else None,
                "lock_pid": d.lock_pid,
                "pinned": d.pinned.as_dict() if d.pinned else None,
                "identity": pickle.dumps(d.identity),
            }
            for d in self.duts.values()
        ]
        sheets = {dut_id: str(d.path) for dut_id, d in self.datasheets.items()}
        return {
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "duts": duts,
            "datasheets": sheets,
            "controller_pid": os.getpid(),
            "hosts": self.hosts.shared(),
        }

    def open(self, args: list[str]) -> None:
        """Create the run folder, attach scratch devices, identify and guard every device.

        Datasheets are read first: a bad one stops the run before a device is touched.
        """
        # released at exit too: pytest skips its unconfigure when a sessionfinish hook raises
        # (a closed pipe: `pytest ... | tee log` after Ctrl-C)
        atexit.register(self.close)
        stall_override()  # a bad value is refused before anything starts
        self.mark.open()  # from here on, no process of the session outlives it
        # first of all: put back what a session that died left tuned
        self.tuner = Tuner(None, self.options.tune)  # its journal: the machine's state folder
        self.tuner.recover()
        which("fio", FIO_INSTALL_HINT)  # before anything is created: every test needs fio
        self.hosts.config = self.options.ssh_config
        given = load_given(self.options.datasheets, len(self.options.duts))
        candidates = () if given else load_candidates(self.options.datasheets)
        if self.options.compare:  # a name that is not in the database stops the run here
            with ResultsDb(self.options.db) as db:
                self.compared = db.resolve(self.options.compare)
        self.made_report_dir = not self.options.report_dir.exists()
        for leaked in sweep_stale(self.options.report_dir / SCRATCH_DIR):
            self.warnings.append(f"released {leaked}, a scratch device of a session that died")
        try:
            self._resolve_all()
            for dut in self.duts.values():  # a plugin's health source at fault refuses here
                self.sampler(dut)
            identities = {dut_id: dut.identity for dut_id, dut in self.duts.items()}
            force = self.options.datasheets.force
            self.datasheets = assign(identities, given, candidates, force)
        except BaseException:
            self.close()
            raise
        # a refused run leaves nothing: the run folder comes once every check has passed
        try:
            self._start_run(args, identities)
        except BaseException:
            self.close()  # devices unlocked, scratch released, settings back
            raise

    def _start_run(self, args: list[str], identities: dict[str, DeviceIdentity]) -> None:
        """The run folder, the ``latest`` link, the host record, results.json and the database."""
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._link_latest()
        except OSError as exc:
            raise storage_error(
                Path(exc.filename or self.run_dir), exc, "--ssd-report-dir"
            ) from None
        # the record says what the run measures under: after --ssd-tune, with every device here
        here = {k: v for k, v in identities.items() if self.duts[k].address is None}
        self.host = self._host_record(here, identities)
        environment = runinfo.collect(args, self.host)
        self.db = RunWriter(self.options.db, self.run_id, self.run_dir, environment)
        for dut_id, dut in self.duts.items():
            sheet = self.datasheets.get(dut_id)
            health = self.sampler(dut)
            description = {
                **dut.describe(),
                "datasheet": str(sheet.path) if sheet else None,
                "health": health.source.name if health.source else health.reason,
            }
            self.db.add_device(dut_id, description, dut.label)
        self.store = ResultsExport(self.run_dir, self.options.db, self.run_id)
        self.store.write()

    def _host_record(
        self, here: dict[str, DeviceIdentity], identities: dict[str, DeviceIdentity]
    ) -> HostRecord:
        """This machine's settings (if a device is here) and every test host's."""
        hosts: dict[str, tuple[HostTuner, dict[str, DeviceIdentity]]] = {}
        for dut_id, dut in self.duts.items():
            if dut.address is None:
                continue
            if dut.address.label not in hosts:
                host = self.hosts.host(dut.address)
                folder = host.ssh.control_dir / "tune"
                tuner = HostTuner(host.ssh, host.machine, self.options.tune, folder)
                hosts[dut.address.label] = (tuner, {})
            hosts[dut.address.label][1][dut_id] = identities[dut_id]
        self.host_tuners = [tuner for tuner, _ in hosts.values()]
        local = present(self.tuner, "the tuner")
        # a run only on test hosts measures nothing under this machine's settings
        mine = local.start(here) if here or not hosts else HostRecord((), local.log)
        theirs = tune_hosts(list(hosts.values()), self.warnings)
        return HostRecord((*mine.readings, *theirs), combined(mine.tune, self.host_tuners))

    def _resolve_all(self) -> None:
        """Resolve, lock and guard every device (all at once): the named ones before scratch."""
        specs = list(zip(self.dut_ids, self.options.duts, strict=True))
        seen: dict[tuple[str, int, int], str] = {}
        wanted = [(dut_id, spec) for dut_id, spec in specs if spec.path is not None]
        found = prepare(wanted, lambda item, order: self._resolve_named(*item, seen, order))
        named = dict(zip((dut_id for dut_id, _ in wanted), found, strict=True))
        self._check_scratch_space()
        duts = [
            named[dut_id] if dut_id in named else self._make_scratch(dut_id, spec, index)
            for index, (dut_id, spec) in enumerate(specs)
        ]
        for index, (dut, summary) in enumerate(zip(duts, each(duts, self._summary), strict=True)):
            dut.summary = summary
            dut.classify(self.options.classes, index, self.extensions)
            dut.label = default_label(dut, self.options.labels, index)
            self.duts[dut.id] = dut
        forced = self.options.purge
        added = self.extensions.purge_methods
        if forced and forced not in {*PURGE_NAMES, *self.extensions.purge_names}:
            names = ", ".join((*PURGE_NAMES, *self.extensions.purge_names))
            raise ConfigError(f"--ssd-purge={forced}: no such purge method (one of {names})")
        if forced and not self.options.readonly:  # the plan must not promise what cannot run
            for dut in self.duts.values():
                if pick_purge(dut.identity, added, forced, self.machine(dut)) is None:
                    choose_purge(dut.identity, PurgeMethod(forced))

    def _lock(self, node: Path) -> DeviceLock:
        lock = DeviceLock(node)
        lock.acquire()
        self.locks.append(lock)
        return lock

    def _claim(self, lock: DeviceLock, identity: DeviceIdentity) -> Pinned:
        """Pin what *lock* holds (it must be what *identity* was read from); claim it to write."""
        pinned = Pinned.of(lock.key, identity)
        pinned.check(str(lock.node), Pinned.of(device_key(lock.node), identity))
        if not self.options.readonly:
            lock.claim()
        return pinned

    def _resolve_named(
        self, dut_id: str, spec: DutSpec, seen: dict[tuple[str, int, int], str], order: Order
    ) -> Dut:
        """A device or file the user named: its node, lock, size, guard and confirmation."""
        if spec.address is not None:
            return self._resolve_remote(dut_id, spec, spec.address, seen, order)
        node = canonical(present(spec.path, "the device path"))
        facts = guard.check_readable(node)
        fio_path(str(node))  # a name fio would split or cut is refused before anything
        key = device_key(node)
        with order.naming.turn(order.index):
            if key in seen:
                raise SafetyError(
                    f"refusing --dut={spec.raw}: it is the same device as --dut={seen[key]}"
                    f" ({node}); name each device once"
                )
            seen[key] = spec.raw
        with order.locking.turn(order.index):
            lock = self._lock(node)
        identity = identify(node)
        _check_size(node, identity.size_bytes, facts.kind)
        if not self.options.readonly:
            guard.check_writable(node)
            guard.check_confirmation(
                str(node), identity.summary(), identity.confirm_token, self.options.confirm
            )
        return Dut(
            id=dut_id,
            path=node,
            identity=identity,
            scratch=False,
            readonly=self.options.readonly,
            pinned=self._claim(lock, identity),
        )

    def _resolve_remote(
        self,
        dut_id: str,
        spec: DutSpec,
        address: SshAddress,
        seen: dict[tuple[str, int, int], str],
        order: Order,
    ) -> Dut:
        """A device in a test host: the same checks as a local one, made on the host."""
        host = self.hosts.host(address)  # unreachable: one line, before anything is written
        host.machine.which("fio", FIO_INSTALL_HINT)
        view = SshView.snapshot(host.ssh, address.path, write=False)
        node = canonical(Path(address.path), view)
        facts = guard.check_readable(node, view)
        fio_path(str(node))
        real = view.realpath(address.path)
        found = view.stat(real)
        if found is None or found.kind != "block":
            raise SafetyError(
                f"refusing --dut={spec.raw}: on {host.ssh.where} it is {real}, a regular file,"
                " not a block device; on a test host, name a block device"
            )
        key = (f"{host.ssh.where} block", os.major(found.rdev), os.minor(found.rdev))
        with order.naming.turn(order.index):
            if key in seen:
                first = parse_address(seen[key])
                spelled = (first.destination, first.port) != (address.destination, address.port)
                twice = ": the same host named twice" if spelled else ""
                raise SafetyError(
                    f"refusing --dut={spec.raw}: it is the same device as --dut={seen[key]}"
                    f" ({node} on {host.ssh.where}{twice}); name each device once"
                )
            seen[key] = spec.raw
        with order.locking.turn(order.index):
            pid = self.hosts.lock(address, str(node))
        identity = self._identify(node, address)
        _check_size(node, identity.size_bytes, facts.kind)
        dut = Dut(
            id=dut_id,
            path=node,
            identity=identity,
            scratch=False,
            readonly=self.options.readonly,
            address=address,
            lock_pid=pid,
            pinned=Pinned.of(key_now(found), identity),
        )
        if not self.options.readonly:
            self.guard_writes(dut)
            self.hosts.claim(address, str(node))
        return dut

    def _identify(self, path: Path, address: SshAddress | None) -> DeviceIdentity:
        """The identity of *path* on this machine, or on the test host of *address*."""
        return self._read(path, address)[1]

    def _read(
        self, path: Path, address: SshAddress | None, view: View | None = None
    ) -> tuple[tuple[str, int, int], DeviceIdentity]:
        """The key (:func:`~.node.device_key`) and identity of *path* now, on this machine or
        on the test host of *address* (through *view*, a snapshot of the host, if given)."""
        if address is None:
            return device_key(path), identify(path)
        host = self.hosts.host(address)
        view = view or SshView.snapshot(host.ssh, str(path), write=False)
        found = view.stat(str(path))
        block = view.block_of(found.rdev) if found is not None else None
        if found is None or block is None:
            raise DeviceError(f"{host.ssh.where}: {path} is not a block device there")
        return key_now(found), identify_remote(host.machine, str(path), block.name)

    def _summary(self, dut: Dut) -> DeviceSummary:
        """The device's summary; on a test host from a copy of what its sysfs says."""
        if dut.address is None:
            return summarize(dut.identity)
        with tempfile.TemporaryDirectory(prefix="ssd-sysfs-") as tmp:
            try:
                name = dut.identity.kernel_name or ""
                root = sysfs_copy(self.machine(dut), name, Path(tmp)) if name else None
            except SsdError as exc:  # the summary says "not exposed" rather than stop the run
                self.warnings.append(f"{dut.id}: the host's sysfs could not be read: {exc}")
                root = None
            found = summarize(dut.identity, sysfs_root=root)
        return dataclasses.replace(found, path=f"{found.path} on {dut.address.label}")

    def guard_view(self, dut: Dut, path: str) -> View:
        """The guard's facts about *path* now, on *dut*'s machine (knowing the session's claim)."""
        if dut.address is None:
            return LocalView(claimed=dut.claimed)
        ours = (dut.lock_pid,) if dut.lock_pid else ()
        return self.hosts.view(dut.address, path, write=True, ours=ours, claimed=dut.claimed)

    def machine(self, dut: Dut) -> Machine:
        """The machine *dut* is in."""
        return LOCAL if dut.address is None else self.hosts.host(dut.address).machine

    def fio_server(self, dut: Dut) -> FioServer | None:
        """The fio server that runs *dut*'s jobs (None: fio runs here)."""
        return None if dut.address is None else self.hosts.server(dut.address)

    def _check_scratch_space(self) -> None:
        sizes = [spec.scratch_size for spec in self.options.duts if spec.scratch_size]
        if not sizes:
            return
        folder, free = free_bytes(self.options.report_dir / SCRATCH_DIR)
        if sum(sizes) > free:
            asked = " + ".join(binary_size(n) for n in sizes)
            raise DeviceError(
                f"scratch devices of {asked} do not fit in the {binary_size(free)} free in"
                f" {folder}; give a smaller scratch:SIZE or --ssd-report-dir on a larger"
                " filesystem"
            )

    def _make_scratch(self, dut_id: str, spec: DutSpec, index: int) -> Dut:
        size = present(spec.scratch_size, "the scratch size")
        device = create(size, self.options.report_dir / SCRATCH_DIR, index)
        self.scratch.append(device)
        lock = self._lock(device.path)
        identity = identify(device.path)
        return Dut(
            id=dut_id,
            path=device.path,
            identity=identity,
            scratch=True,
            readonly=self.options.readonly,
            note=device.note,
            pinned=self._claim(lock, identity),
        )

    def profile(self, dut: Dut) -> Profile:
        """The profile for *dut*: the option's, else quick on scratch and full on real devices."""
        return profile_for(self.options.profile, dut.scratch, self.options.idle)

    def profile_of(self, dut_id: str) -> Profile:
        """The profile of device *dut_id*, known before it is opened (``--collect-only``)."""
        spec = dict(zip(self.dut_ids, self.options.duts, strict=True))[dut_id]
        return profile_for(self.options.profile, spec.is_scratch, self.options.idle)

    def sampler(self, dut: Dut) -> Sampler:
        """A health sampler for *dut* (inactive, with the reason, where it has no sensor)."""
        if dut.id not in self.health_sources:
            added = self.extensions.health_source(dut.identity)
            found = (
                (added, added.name)
                if added is not None
                else find_source(dut.identity, machine=self.machine(dut))
            )
            self.health_sources[dut.id] = found
        source, what = self.health_sources[dut.id]
        interval = self.options.health_interval
        reason = what if source is None else ("" if interval else "--ssd-health-interval=0")
        return Sampler(source if interval else None, interval, reason)

    def check_same(self, dut: Dut, view: View | None = None) -> None:
        """Stop the run (:class:`~.pinned.DeviceChanged`) unless *dut*'s node still names the
        device locked and confirmed: its device number and identity read again now."""
        pinned = present(dut.pinned, "the device locked")
        node = str(dut.path)
        try:
            if dut.address is not None:
                view = view or self.guard_view(dut, node)
            now = Pinned.of(*self._read(dut.path, dut.address, view))
        except (OSError, SsdError) as exc:
            pinned.check(node, None, f"it cannot be identified: {exc}")
            return
        pinned.check(node, now)

    def guard_writes(self, dut: Dut) -> None:
        """Refuse (SafetyError) unless *dut* may be written now: the same device, the guard
        and --ssd-confirm."""
        view = self.guard_view(dut, str(dut.path))
        self.check_same(dut, view)
        guard.check_writable(dut.path, view)
        if not dut.scratch:
            identity = dut.identity
            shown = f"{dut.path} on {view.where}" if view.where else str(dut.path)
            guard.check_confirmation(
                shown, identity.summary(), identity.confirm_token, self.options.confirm
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
                device=dut_id,
                target=dut.path,
                identity=dut.identity,
                state=state,
                folder=self.run_dir / "states" / dut_id,
                guard=lambda: self.guard_writes(dut),
                same=lambda: self.check_same(dut),
                speeds=self.speeds,
                speed_key=speed_key(dut.identity, dut.scratch),
                purge_method=self.options.purge,
                progress=self.progress,
                sampler=lambda: self.sampler(dut),
                written=dut.written,
                charts=_save_charts,
                added_purges=self.extensions.purge_methods,
                machine=self.machine(dut),
                server=lambda: self.fio_server(dut),
                view=lambda path: self.guard_view(dut, path),
            )
        return self.keepers[dut_id]

    def _link_latest(self) -> None:
        """Point ``<report dir>/latest`` at this run, unless it is something not ours."""
        latest = self.options.report_dir / LATEST
        if latest.is_symlink() and not _RUN_ID.match(str(latest.readlink())):
            self.warnings.append(f"{latest} is a link pytest-ssd did not make: left as it is")
            return
        if latest.exists() and not latest.is_symlink():
            self.warnings.append(f"{latest} is not pytest-ssd's link: left as it is")
            return
        tmp = latest.with_name(f".{LATEST}.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(self.run_id)
        tmp.replace(latest)

    def close(self) -> None:
        """Restore tuned settings, unlock devices, release scratch; always called, also after
        Ctrl-C, and safe to call twice."""
        for tuner in self.tuners():
            tuner.restore()
        self.close_hosts()
        while self.locks:
            self.locks.pop().release()
        if self.scratch:
            while self.scratch:
                self.scratch.pop().release()
            with contextlib.suppress(OSError):  # when no other session keeps its scratch here
                (self.options.report_dir / SCRATCH_DIR).rmdir()
                if self.made_report_dir:  # a refused run leaves no folder it made
                    self.options.report_dir.rmdir()
        for pid, name in self.mark.close():
            sys.stderr.write(f"pytest-ssd: stopped {name} (pid {pid}), left running by the run\n")
        atexit.unregister(self.close)

    def tuners(self) -> list[Tuner | HostTuner]:
        """This machine's tuner and each test host's (the controller's; none on workers)."""
        return [*([self.tuner] if self.tuner else []), *self.host_tuners]

    def close_hosts(self) -> None:
        """Stop this process's fio servers on test hosts, unlock, disconnect; say what was left."""
        for problem in self.hosts.close():
            sys.stderr.write(f"pytest-ssd: {problem}\n")

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
