"""``--ssd-resume=RUN|last``: a session that continues a run that was cut short.

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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.db import ResultsDb, RunInfo
from pytest_ssd.db.lab import RUN_ID
from pytest_ssd.db.resume import FinishedTest, finished_tests
from pytest_ssd.db.url import DbUrl
from pytest_ssd.device.identity import DeviceIdentity, binary_size
from pytest_ssd.errors import ConfigError

OPTION = "--ssd-resume"
#: the run's report, made last: a finished run without it was cut short while building it
REPORT = "report.html"
#: ``--ssd-resume=last``: the newest run in the database
LAST = "last"
#: what tells one drive from another, and without a serial what tells a loop device or file
SAME_DRIVE = ("model", "serial", "size_bytes")
WITHOUT_SERIAL = ("kind", "path", "backing_file")
#: why a state group cut short is reached again from scratch (the plan and the header say it)
#: what xdist adds to a test's id under -n (its device's group): a run resumed with or
#: without -n finds its tests all the same
_GROUP = re.compile(r"@dut-[^\]]*$")
UNKNOWN_STATE = (
    "the run stopped at an unknown moment, so the keeper cannot prove the device's state:"
    " the state of a group cut short is reached again from a purge"
)


def resume_option(text: str) -> str:
    """``--ssd-resume``'s converter: a run id, or ``last``."""
    if text != LAST and not RUN_ID.match(text):
        raise argparse.ArgumentTypeError(
            f"{OPTION}={text!r} is neither a run id (pytest-ssd list shows them) nor '{LAST}'"
        )
    return text


@dataclass(frozen=True)
class Resumed:
    """The run a session continues, and what it keeps of it."""

    run_id: str
    run_dir: Path
    #: the tests the run finished, by node id: reported as recorded, not run again
    kept: dict[str, FinishedTest] = field(default_factory=dict)
    #: each device's description as the run recorded it (the controller's only)
    drives: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, db_url: DbUrl, ref: str) -> Resumed:
        """The run *ref* names; ConfigError when it cannot be resumed (finished, gone)."""
        with ResultsDb(db_url) as db:
            run = db.run("latest" if ref == LAST else ref)
            kept = {plain_id(k): test for k, test in finished_tests(db.conn, run.id).items()}
        _resumable(run, ref)
        drives = {drive.dut_id: drive.description for drive in run.drives}
        return cls(run.id, Path(run.run_dir), kept, drives)

    def kept_test(self, nodeid: str) -> FinishedTest | None:
        """The recorded outcome of test *nodeid*, if the run finished it."""
        return self.kept.get(plain_id(nodeid))

    @property
    def saved_s(self) -> float:
        """Seconds the kept tests took (with their state transitions): what is not redone."""
        return sum(test.seconds for test in self.kept.values())

    def check_devices(self, identities: dict[str, DeviceIdentity], scratch: set[str]) -> list[str]:
        """Notes on the devices; ConfigError in one line unless each is the drive run before."""
        if set(identities) != set(self.drives):
            raise ConfigError(
                f"{OPTION}: run {self.run_id} measured {_names(self.drives)}, this session"
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
            if any(before.get(key) != now.get(key) for key in keys):
                raise ConfigError(
                    f"{OPTION}: {dut_id} is not the drive run {self.run_id} measured"
                    f" ({_drive(before)} then, {_drive(now)} now): resume on that drive,"
                    " or start a new run"
                )
        return notes

    def workerinput(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "kept": [[t.nodeid, t.outcome, t.seconds, t.message] for t in self.kept.values()],
        }

    @classmethod
    def from_workerinput(cls, data: dict[str, Any]) -> Resumed:
        kept = {plain_id(row[0]): FinishedTest(*row) for row in data["kept"]}
        return cls(data["run_id"], Path(data["run_dir"]), kept)


def plain_id(nodeid: str) -> str:
    """A test's id without what xdist adds to it under -n."""
    return _GROUP.sub("", nodeid)


def _resumable(run: RunInfo, ref: str) -> None:
    # the database marks the run finished before its report is built: a run killed while
    # building it is finished but has no report.html, and is resumed to build it
    if run.complete and (Path(run.run_dir) / REPORT).exists():
        raise ConfigError(
            f"{OPTION}={ref}: run {run.id} finished ({run.end}): only a run cut short can be"
            " resumed; start a new run"
        )
    if not Path(run.run_dir).is_dir():
        raise ConfigError(
            f"{OPTION}={ref}: run {run.id}'s folder {run.run_dir} is gone: it cannot be resumed"
        )


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
    return ", ".join(parts)
