"""--ssd-tune: apply METHOD §9's settings for the session and put every one of them back.

The restore file (``<report dir>/.ssd-tune-restore.json``) is written *before* the first
change: the owner's pid and start time and every planned change with its original value.
It is removed once everything is back.  A session that finds one whose owner is gone
(killed, crashed, power loss) puts those settings back before doing anything else.
Only the controller tunes; xdist workers never touch a setting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import SsdError
from pytest_ssd.host import settings
from pytest_ssd.host.changes import Change, change_from_dict
from pytest_ssd.host.facts import BUSY_SAMPLE_S
from pytest_ssd.host.io import Io, Roots, SystemIo, TuneError, read_attribute
from pytest_ssd.host.record import HostRecord, TuneLog, device_settings
from pytest_ssd.host.settings import Setting

RESTORE_FILE = ".ssd-tune-restore.json"


def start_time(procfs: Path, pid: int) -> str | None:
    """The process's start time in clock ticks since boot (22nd field of stat): None if gone."""
    text = read_attribute(procfs / str(pid) / "stat")
    if text is None or ")" not in text:
        return None
    return text.rpartition(")")[2].split()[19]


@dataclass
class Journal:
    """The restore file: who tuned, and what goes back."""

    path: Path
    pid: int
    started: str | None
    changes: list[Change] = field(default_factory=list)

    def write(self) -> None:
        """Atomically, and flushed to disk: it must survive the crash it is for."""
        data = {"pid": self.pid, "started": self.started,
                "changes": [c.as_dict() for c in self.changes]}  # fmt: skip
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w") as fh:
            json.dump(data, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(self.path)

    @classmethod
    def load(cls, path: Path) -> Journal:
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            changes = [change_from_dict(c) for c in data["changes"]]
            return cls(path, int(data["pid"]), data.get("started"), changes)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TuneError(f"{path}: not a restore file ({exc}); check and delete it") from None

    def owner_alive(self, procfs: Path) -> bool:
        started = start_time(procfs, self.pid)
        return started is not None and started == self.started


def restore_all(changes: Iterable[Change], io: Io) -> tuple[list[str], list[str]]:
    """Put *changes* back, last first; what was put back and what failed."""
    done, failed = [], []
    for change in reversed(list(changes)):
        try:
            change.restore(io)
            done.append(change.describe(back=True))
        except SsdError as exc:
            failed.append(str(exc))
    return done, failed


class Tuner:
    """The machine's settings for one session (controller only)."""

    def __init__(
        self,
        report_dir: Path,
        requested: bool,
        roots: Roots | None = None,
        io: Io | None = None,
        busy_sample_s: float = BUSY_SAMPLE_S,
    ) -> None:
        self.roots = roots or Roots()
        self.io: Io = io or SystemIo()
        self.busy_sample_s = busy_sample_s
        self.log = TuneLog(requested=requested)
        self.journal = Journal(report_dir / RESTORE_FILE, os.getpid(),
                               start_time(self.roots.procfs, os.getpid()))  # fmt: skip
        #: changes applied, or being applied when an interrupt came (it may have taken effect)
        self._touched: list[Change] = []
        self._restored = False

    @property
    def requested(self) -> bool:
        return self.log.requested

    def recover(self) -> None:
        """Put back what a session that died left changed; refuse to tune beside a live one."""
        path = self.journal.path
        if not path.exists():
            return
        left = Journal.load(path)
        if left.owner_alive(self.roots.procfs) and left.pid != self.journal.pid:
            if self.requested:
                raise TuneError(
                    f"pytest-ssd (pid {left.pid}) has tuned this machine and is still running"
                    f" ({path}): let it finish before --ssd-tune"
                )
            return
        done, failed = restore_all(left.changes, self.io)
        self.log.recovered = [f"{line} (left by pid {left.pid})" for line in done]
        if failed:
            raise TuneError(f"cannot restore what pid {left.pid} left changed: {failed[0]}")
        path.unlink()

    def settings(self, devices: Mapping[str, DeviceIdentity]) -> list[Setting]:
        return [*settings.host_settings(self.roots), *device_settings(self.roots, self.io, devices)]

    def start(self, devices: Mapping[str, DeviceIdentity]) -> HostRecord:
        """Tune (if asked) and read what the run will run under."""
        tunables = self.settings(devices)
        if self.requested:
            self._apply(tunables)
        return HostRecord.read(
            self.roots, self.io, tunables, devices, tune=self.log, busy_sample_s=self.busy_sample_s
        )

    def _apply(self, tunables: list[Setting]) -> None:
        planned: list[Change] = []
        for setting in tunables:
            try:
                planned.extend(setting.changes())
            except TuneError as exc:
                self.log.skipped.append(str(exc))
        if not planned:
            return
        self.journal.changes = planned
        self.journal.write()  # before the first change
        try:
            for change in planned:
                self._touched.append(change)
                try:
                    change.apply(self.io)
                except SsdError:
                    self._touched.pop()  # refused: nothing changed
                    raise
                self.log.changed.append(change.describe())
        except BaseException as exc:
            self.restore()
            if isinstance(exc, SsdError):
                raise TuneError(f"--ssd-tune: {exc}; every setting changed is back") from None
            raise

    def restore(self) -> None:
        """Put back everything this session changed; idempotent; keeps the file on failure."""
        if self._restored or not self.journal.changes:
            return
        self._restored = True
        self.log.restored, self.log.failed = restore_all(self._touched, self.io)
        if not self.log.failed:
            self.journal.path.unlink(missing_ok=True)

    def summary_lines(self) -> list[str]:
        """What tuning did, for the terminal summary."""
        log = self.log
        lines = [f"recovered: {line}" for line in log.recovered]
        if log.requested and not (log.changed or log.skipped):
            lines.append("--ssd-tune: every available setting was already as recommended")
        lines += [f"--ssd-tune changed: {line}" for line in log.changed]
        lines += [f"--ssd-tune could not set: {line}" for line in log.skipped]
        lines += [f"--ssd-tune restored: {line}" for line in log.restored]
        lines += [
            f"--ssd-tune could NOT restore: {line} (kept in {self.journal.path})"
            for line in log.failed
        ]
        return lines
