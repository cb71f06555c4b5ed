"""``--ssd-resume=RUN|last``: a session that continues a run that was cut short; and
``--ssd-run-id=ID``: a run whose id is given, new the first time and resumed after a cut (a
CI job's retry names the run its failed attempt started, before it exists).

Everything comes from the database and the run folder, nothing from the
process that stopped (it may have been killed, or the machine rebooted): the
tests the run finished (an outcome in the database) are kept as recorded; the
rest run, in the same run (its id, folder, report and results.json).

The device must be the drive the run measured (serial, model, capacity; a loop
device's backing file when it has no serial), checked before anything is
written.  A scratch device is made anew: every state is reached again on it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ssd.db.runid import is_run_id
from pytest_ssd.db.url import DbUrl
from pytest_ssd.device.identity import DeviceIdentity, binary_size
from pytest_ssd.documents import read_text_bounded
from pytest_ssd.errors import ConfigError, SsdError, present
from pytest_ssd.results.files import storage_error
from pytest_ssd.results.junit import RECORDS
from pytest_ssd.state.estimate import duration

if TYPE_CHECKING:  # a worker never opens the database
    from pytest_ssd.db import RunInfo
    from pytest_ssd.db.unfinished import FinishedTest

OPTION = "--ssd-resume"
#: a run of a given id: new when the database has none of it, resumed when it was cut short
RUN_ID_OPTION = "--ssd-run-id"
#: what a refusal of a finished run tells to do, by the option that named it
AFTER_FINISHED = {
    OPTION: "only a run cut short can be resumed; start a new run",
    RUN_ID_OPTION: "it is not run again: give another id for a new run",
}
#: the run's report, made last: a finished run without it was cut short while building it
REPORT = "report.html"
#: ``--ssd-resume=last``: the newest run in the database
LAST = "last"
#: in the run folder, a JSON line per finished test phase: the test's plain properties (not its
#: records, which the database holds), written just before its outcome is committed; a kept
#: test's reports carry them again (its junit properties, its row in the report)
PROPERTIES = "test-properties.jsonl"
#: the most of it a resume reads (a run of thousands of tests writes a few MiB)
MAX_PROPERTIES_BYTES = 1 << 30
#: the run environment's record of its tests and measuring options (plugin/shape.py)
SHAPE_KEY = "shape"
#: the shape of a run recorded before runs kept theirs, from its command line (plugin/shape.py)
ArgvShape = Callable[[list[str]], "dict[str, str] | None"]
#: what tells one drive from another, and without a serial what tells a loop device or file
SAME_DRIVE = ("model", "serial", "size_bytes")
WITHOUT_SERIAL = ("kind", "path", "backing_file", "backing_inode")
#: compared only when the run recorded them (a run of a pytest-ssd before them has not)
RECORDED_SINCE = ("backing_inode",)
#: why a state group cut short is reached again from scratch (the plan and the header say it)
UNKNOWN_STATE = (
    "the run stopped at an unknown moment, so the keeper cannot prove the device's state:"
    " the state of a group cut short is reached again from a purge"
)


def resume_option(text: str) -> str:
    """``--ssd-resume``'s converter: a run id, or ``last``."""
    if text != LAST and not is_run_id(text):
        raise argparse.ArgumentTypeError(
            f"{OPTION}={text!r} is neither a run id (pytest-ssd list shows them) nor '{LAST}'"
        )
    return text


def run_id_option(text: str) -> str:
    """``--ssd-run-id``'s converter: a run id, e.g. ``$CI_PIPELINE_ID-$CI_JOB_NAME_SLUG``."""
    if not is_run_id(text):
        raise argparse.ArgumentTypeError(
            f"{RUN_ID_OPTION}={text!r} is not a run id: 1 to 100 letters, digits, '.', '_'"
            " or '-', a letter or digit first (not 'latest' or 'last'), e.g."
            " $CI_PIPELINE_ID-$CI_JOB_NAME_SLUG"
        )
    return text


@dataclass(frozen=True)
class Resumed:
    """The run a session continues, and what it keeps of it."""

    run_id: str
    run_dir: Path
    #: the run's devices
    dut_ids: tuple[str, ...] = ()
    #: the tests the run finished, by :func:`resume_key`: reported as recorded, not run again
    kept: dict[tuple[str, str], FinishedTest] = field(default_factory=dict)
    #: each device's description as the run recorded it (the controller's only)
    drives: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the option that named the run (its refusals name it)
    option: str = OPTION

    @classmethod
    def load(
        cls,
        db_url: DbUrl,
        ref: str,
        shape: tuple[tuple[str, str], ...] = (),
        argv_shape: ArgvShape | None = None,
    ) -> Resumed:
        """The run *ref* names; ConfigError when it cannot be resumed (finished, gone, not
        synced, or this session's tests and options, *shape*, are not the run's: a run that
        recorded no shape, by its command line read with *argv_shape*); DatabaseError when
        the database has no such run."""
        # a run that is not there raised: only --ssd-run-id's is None
        return present(cls._load(db_url, ref, shape, argv_shape, OPTION), f"run {ref}")

    @classmethod
    def given(
        cls,
        db_url: DbUrl,
        run_dir: Path,
        shape: tuple[tuple[str, str], ...] = (),
        argv_shape: ArgvShape | None = None,
    ) -> Resumed | None:
        """``--ssd-run-id``: None when the database has no run of *run_dir*'s name (a new run
        takes that id and folder), else the run resumed as :meth:`load` resumes it (refused
        the same ways: a finished run is not run again).  A server that cannot be reached
        cannot say: a new run when the folder is not there (it records into its spool, as any
        run whose server is away), else refused in one line."""
        from pytest_ssd.db.conn import Unreachable  # noqa: PLC0415  # a lab's server

        try:
            return cls._load(db_url, run_dir.name, shape, argv_shape, RUN_ID_OPTION)
        except Unreachable as exc:
            if not run_dir.exists():
                return None
            raise ConfigError(
                f"{RUN_ID_OPTION}={run_dir.name}: its folder {run_dir} is here and {exc}:"
                " whether the run finished is the server's to say; run again once it answers"
            ) from None

    @classmethod
    def _load(
        cls,
        db_url: DbUrl,
        ref: str,
        shape: tuple[tuple[str, str], ...],
        argv_shape: ArgvShape | None,
        option: str,
    ) -> Resumed | None:
        from pytest_ssd.db import ResultsDb  # noqa: PLC0415  # the controller reads the run
        from pytest_ssd.db.sync import count_rows  # noqa: PLC0415
        from pytest_ssd.db.unfinished import finished_tests  # noqa: PLC0415

        if option == RUN_ID_OPTION and not _readable(db_url):  # the lab's first run
            return None
        with ResultsDb(db_url) as db:
            if option == RUN_ID_OPTION and not db.has_run(ref):
                return None
            run = db.run("latest" if ref == LAST else ref)
            recorded = finished_tests(db.conn, run.id).values()
            rows = None if db_url.sqlite else count_rows(db.conn, run.id)
        asked = f"{option}={ref}"
        _resumable(run, asked, AFTER_FINISHED[option])
        if rows is not None:  # a lab's server: its spool in the run folder may know more
            _synced(run, asked, rows, db_url, AFTER_FINISHED[option])
        _same_run(run, asked, shape, argv_shape)
        said = recorded_properties(Path(run.run_dir))
        finished = [replace(t, properties=said.get(t.nodeid, ())) for t in recorded]
        drives = {drive.dut_id: drive.description for drive in run.drives}
        resumed = cls.keeping(run.id, Path(run.run_dir), finished, tuple(drives), drives)
        resumed.ids_by_drive()  # a run that cannot be paired is refused before anything
        return replace(resumed, option=option)

    @classmethod
    def keeping(
        cls,
        run_id: str,
        run_dir: Path,
        finished: Iterable[FinishedTest],
        dut_ids: tuple[str, ...],
        drives: dict[str, dict[str, Any]] | None = None,
    ) -> Resumed:
        """Run *run_id*, keeping its *finished* tests by :func:`resume_key`."""
        kept = {resume_key(test.nodeid, dut_ids): test for test in finished}
        return cls(run_id, run_dir, dut_ids, kept, drives or {})

    def ids_by_drive(self) -> dict[str, str]:
        """Each drive the run measured (its key: :func:`~pytest_ssd.device.naming.recorded_key`)
        -> the id the run gave it: this session's devices are paired with the run's by what
        they are, never by their place among the ``--dut`` options (a run recorded before ids
        were the drives' own keeps its ids).  ConfigError when two of its devices are one."""
        from pytest_ssd.device.naming import recorded_key  # noqa: PLC0415  # the controller's

        found: dict[str, str] = {}
        for dut_id, description in self.drives.items():
            key = recorded_key(description)
            if key in found:
                raise ConfigError(
                    f"{OPTION}: run {self.run_id} recorded {found[key]} and {dut_id} as one"
                    f" drive ({key}): it cannot be paired with this session's; start a new run"
                )
            found[key] = dut_id
        return found

    def kept_test(self, nodeid: str) -> FinishedTest | None:
        """The recorded outcome of test *nodeid*, if the run finished it."""
        return self.kept.get(resume_key(nodeid, self.dut_ids))

    @property
    def saved_s(self) -> float:
        """Seconds the kept tests took (with their state transitions): what is not redone,
        one test after another."""
        return sum(test.seconds for test in self.kept.values())

    @property
    def saved_side_by_side_s(self) -> float:
        """The wall time not spent again when each device has its worker (``-n``): the
        device whose kept tests took longest (a device's tests run one after another)."""
        per_device: dict[str, float] = {}
        for (dut_id, _), test in self.kept.items():
            per_device[dut_id] = per_device.get(dut_id, 0.0) + test.seconds
        return max(per_device.values(), default=0.0)

    def saved(self) -> str:
        """``about 21 s of wall time (about 12 s with a worker per device, -n)``."""
        alone, side_by_side = self.saved_s, self.saved_side_by_side_s
        text = f"about {duration(alone)} of wall time"
        if side_by_side < alone:
            text += f" (about {duration(side_by_side)} with a worker per device, -n)"
        return text

    def check_devices(self, identities: dict[str, DeviceIdentity], scratch: set[str]) -> list[str]:
        """Notes on the devices; ConfigError in one line unless each is the drive run before."""
        if set(identities) != set(self.drives):
            raise ConfigError(
                f"{self.option}: run {self.run_id} measured {_names(self.drives)}, this session"
                f" {_names(identities)}: give the same --dut options as that run"
            )
        notes = []
        for dut_id, identity in identities.items():
            if dut_id in scratch:
                notes.append(
                    f"{dut_id}: a scratch device is made anew: the resumed run reaches every"
                    " state again on it"
                )
                continue
            before = self.drives[dut_id].get("identity") or {}
            now = identity.as_dict()
            keys = SAME_DRIVE if before.get("serial") else SAME_DRIVE + WITHOUT_SERIAL
            compared = [key for key in keys if key in before or key not in RECORDED_SINCE]
            if any(before.get(key) != now.get(key) for key in compared):
                raise ConfigError(
                    f"{self.option}: {dut_id} is not the drive run {self.run_id} measured"
                    f" ({_drive(before)} then, {_drive(now)} now): resume on that drive,"
                    " or start a new run"
                )
        return notes

    def workerinput(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "dut_ids": list(self.dut_ids),
            "kept": [
                [t.nodeid, t.outcome, t.seconds, t.message, [list(p) for p in t.properties]]
                for t in self.kept.values()
            ],
        }

    @classmethod
    def from_workerinput(cls, data: dict[str, Any]) -> Resumed:
        from pytest_ssd.db.unfinished import FinishedTest  # noqa: PLC0415  # a resumed run's

        finished = (
            FinishedTest(nodeid, outcome, seconds, message, tuple((k, v) for k, v in properties))
            for nodeid, outcome, seconds, message, properties in data["kept"]
        )
        return cls.keeping(data["run_id"], Path(data["run_dir"]), finished, tuple(data["dut_ids"]))


def resume_key(nodeid: str, dut_ids: Iterable[str]) -> tuple[str, str]:
    """What a test is in any run on these devices, with or without -n: its device, and its id
    without the device parameter and xdist's group (:func:`shared_test_id`)."""
    from pytest_ssd.db.model import shared_test_id  # noqa: PLC0415  # a resumed run's

    for dut_id in sorted(dut_ids, key=len, reverse=True):  # 'SN-n1' before 'SN'
        shared = shared_test_id(nodeid, dut_id)
        if shared != nodeid:
            return dut_id, shared
    return "", nodeid  # a test of no device


def keep_properties(run_dir: Path, nodeid: str, pairs: Iterable[tuple[str, object]]) -> None:
    """Append test *nodeid*'s plain properties to the run folder's :data:`PROPERTIES`."""
    plain = [[name, _plain(value)] for name, value in pairs if name not in RECORDS]
    path = run_dir / PROPERTIES
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps([nodeid, plain]) + "\n")
    except OSError as exc:
        raise storage_error(path, exc, "--ssd-report-dir") from None


def recorded_properties(run_dir: Path) -> dict[str, tuple[tuple[str, object], ...]]:
    """Each test's properties as last written in *run_dir* (none when the file is gone); a
    file that is not a regular one (a FIFO would block the open) is a :class:`ConfigError`."""
    found: dict[str, tuple[tuple[str, object], ...]] = {}
    path = run_dir / PROPERTIES
    try:
        text = read_text_bounded(path, MAX_PROPERTIES_BYTES)
    except FileNotFoundError:
        return found
    except OSError as exc:  # NotAFile, too large, unreadable
        raise ConfigError(f"{OPTION}: cannot read {path}: {exc.strerror}") from None
    for line in text.splitlines():
        with contextlib.suppress(ValueError):  # a line a kill cut short
            nodeid, pairs = json.loads(line)
            found[nodeid] = tuple((name, value) for name, value in pairs)
    return found


def _plain(value: object) -> object:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def _readable(db_url: DbUrl) -> bool:
    """Whether there is a database at *db_url* to look for a run in (False: none yet), migrated
    first when it is older (the session migrates it anyway; a reader cannot read it before)."""
    from pytest_ssd.db.opening import open_writer, schema_version  # noqa: PLC0415
    from pytest_ssd.db.schema import SCHEMA_VERSION  # noqa: PLC0415

    version = schema_version(db_url)
    if 0 < version < SCHEMA_VERSION:
        open_writer(db_url).close()
    return version > 0


def _resumable(run: RunInfo, asked: str, after_finished: str) -> None:
    # the database marks the run finished before its report is built: a run killed while
    # building it is finished but has no report.html, and is resumed to build it
    if run.complete and (Path(run.run_dir) / REPORT).exists():
        raise ConfigError(f"{asked}: run {run.id} finished ({run.end}): {after_finished}")
    if not Path(run.run_dir).is_dir():
        raise ConfigError(
            f"{asked}: run {run.id}'s folder {run.run_dir} is gone: it cannot be resumed"
        )


def _synced(run: RunInfo, asked: str, rows: int, db_url: DbUrl, after_finished: str) -> None:
    """A lab server's run is resumed only as its spool has it: a run that finished while the
    server was away is finished (resumed, it ran every test again: each measurement twice),
    and one whose spool holds more than the server is synced first (the kept tests are the
    server's, the spool would record the others twice)."""
    import sqlite3  # noqa: PLC0415  # the controller's, resuming a lab's run: not every run's

    from pytest_ssd.db.lab import SPOOL_FILE  # noqa: PLC0415
    from pytest_ssd.db.sync import spooled  # noqa: PLC0415

    spool = Path(run.run_dir) / SPOOL_FILE
    if not spool.is_file():
        return
    try:
        found = spooled(spool, run.id)
    except (SsdError, sqlite3.Error) as exc:
        raise ConfigError(f"{asked}: run {run.id}'s spool {spool}: {exc}") from None
    if found is None:
        return
    sync = f"'pytest-ssd sync {run.run_dir} --db={db_url}'"
    if found.complete and (Path(run.run_dir) / REPORT).exists():
        raise ConfigError(
            f"{asked}: run {run.id} finished (its spool {spool} says so; {db_url} has"
            f" not had all of it yet: upload it with {sync}): {after_finished}"
        )
    if found.rows != rows:
        raise ConfigError(
            f"{asked}: run {run.id}'s spool {spool} holds {found.rows} row(s) of it,"
            f" {db_url} {rows}: upload them first with {sync}, then resume"
        )


def _same_run(
    run: RunInfo, asked: str, shape: tuple[tuple[str, str], ...], argv_shape: ArgvShape | None
) -> None:
    """This session's tests and measuring options (*shape*) are the run's, or one line."""
    recorded = run.environment.get(SHAPE_KEY)
    argv = run.environment.get("argv")
    if recorded is None and argv_shape is not None and isinstance(argv, list):
        recorded = argv_shape([str(arg) for arg in argv])  # before runs kept their shape
    if not isinstance(recorded, dict) or not shape:
        return
    differ = [
        f"{name} {_shown(value)} here, {_shown(str(recorded[name]))} in run {run.id}"
        for name, value in shape
        if name in recorded and str(recorded[name]) != value
    ]
    if differ:
        raise ConfigError(
            f"{asked}: this session is not the run it resumes: {'; '.join(differ)}:"
            " give the run's tests and options (docs/resume.md), or start a new run"
        )


def _shown(value: str) -> str:
    if not value:
        return "none"
    return value if len(value.split()) == 1 else repr(value)


def _names(devices: dict[str, Any]) -> str:
    return ", ".join(sorted(devices)) or "no device"


def _drive(identity: dict[str, Any]) -> str:
    size = identity.get("size_bytes")
    parts = [
        f"model {identity.get('model') or 'unknown'}",
        f"serial {identity.get('serial') or 'none'}",
        binary_size(size) if isinstance(size, int) else "size unknown",
    ]
    if not identity.get("serial") and identity.get("backing_file"):
        parts.append(f"on {identity['backing_file']}")
    if not identity.get("serial") and identity.get("backing_inode"):
        parts.append(f"file {identity['backing_inode']} (device:inode)")
    return ", ".join(parts)
