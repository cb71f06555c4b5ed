"""--ssd-tune: apply METHOD §9's settings for the session and put every one of them back.

The restore journal lives in the machine's private state folder
(``/var/lib/pytest-ssd/tune/restore.json``, :mod:`pytest_ssd.statedir`), never in a
report folder: a session runs the recovery as root, and whatever it reads back it
writes to the kernel.  The journal (mode 0600) is written *before* the first change:
every planned change with its original value.  Its owner holds the folder's lock
(``tune.lock``) for the session; a journal whose lock can be taken belongs to a session
that died (killed, crashed, power loss), and the next session puts those settings back
before doing anything else.  An entry is only ever restored to a path this module
computes itself for the setting the entry names, with a value the kernel offers there,
and no file is ever created.  Only the controller tunes; xdist workers never touch a
setting.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.node import describe_pid, lock_holders
from pytest_ssd.errors import ConfigError, SsdError
from pytest_ssd.host import settings
from pytest_ssd.host.changes import Change, FeatureWrite, FileWrite, change_from_dict
from pytest_ssd.host.facts import BUSY_SAMPLE_S
from pytest_ssd.host.io import Io, Roots, SystemIo, TuneError, read_attribute
from pytest_ssd.host.nvme_features import APST
from pytest_ssd.host.record import HostRecord, TuneLog, device_settings
from pytest_ssd.host.settings import FileSetting, Setting
from pytest_ssd.statedir import FileLock, read_private, state_dir, write_private

RESTORE_FILE = "restore.json"
LOCK_FILE = "tune.lock"
_NVME_NODE = re.compile(r"^/dev/nvme\d+(?:n\d+)?$")
#: the largest data buffer a feature carries back (APST: a 256-byte table)
_MAX_FEATURE_DATA = 4096


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
        """Atomically, privately and flushed to disk: it must survive the crash it is for."""
        data = {"pid": self.pid, "started": self.started,
                "changes": [c.as_dict() for c in self.changes]}  # fmt: skip
        write_private(self.path, json.dumps(data, indent=1))

    @classmethod
    def load(cls, path: Path) -> tuple[Journal, list[dict[str, Any]]]:
        """The journal and the raw entries (validated one by one before anything is written)."""
        try:
            data: dict[str, Any] = json.loads(read_private(path))
            entries = [dict(c) for c in data["changes"]]
            return cls(path, int(data["pid"]), data.get("started")), entries
        except ConfigError as exc:
            raise TuneError(str(exc)) from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TuneError(f"{path}: not a restore file ({exc}); check and delete it") from None


def _allowed_files(roots: Roots, setting: str) -> list[FileSetting]:
    """The kernel files this module itself would tune for *setting*, on this machine."""
    if setting == "scheduler":
        # as settings.scheduler names it for each block device (a partition: its disk's)
        folder = roots.sysfs / "class" / "block"
        nodes = sorted(folder.iterdir()) if folder.is_dir() else []
        disks = [n.resolve().parent if (n / "partition").exists() else n for n in nodes]
        queues = tuple(d / "queue" / "scheduler" for d in disks)
        return [FileSetting("scheduler", "I/O scheduler", "none", queues, "", bracketed=True)]
    makers = {"governor": settings.governor, "boost": settings.boost,
              "thp": settings.transparent_hugepages, "aslr": settings.aslr}  # fmt: skip
    return [makers[setting](roots)] if setting in makers else []


def _file_problem(change: FileWrite, roots: Roots) -> str | None:
    found = [s for s in _allowed_files(roots, change.setting) if change.path in s.paths]
    if not found:
        return f"{change.path} is not a file --ssd-tune sets for {change.setting!r}"
    if not change.path.is_file():
        return f"{change.path} does not exist (no file is ever created)"
    choices = found[0].choices(change.path) or list(dict(found[0].names) or ())
    if change.setting == "aslr":
        choices = ["0", "1", "2"]
    if choices and change.original not in choices:
        return f"{change.original!r} is not a value {change.path} takes ({' '.join(choices)})"
    return None


def _feature_problem(change: FeatureWrite) -> str | None:
    if change.setting != "apst" or change.feature != APST:
        return f"feature {change.feature:#04x} of {change.setting!r} is not one --ssd-tune sets"
    try:
        node = Path(change.device).stat()
    except OSError:
        return f"{change.device} does not exist"
    is_device = stat.S_ISBLK(node.st_mode) or stat.S_ISCHR(node.st_mode)
    if not _NVME_NODE.match(change.device) or not is_device:
        return f"{change.device} is not an NVMe device node"
    if change.original not in (0, 1) or len(change.data) > 2 * _MAX_FEATURE_DATA:
        return f"APST value {change.original} or its data is not one the feature takes"
    return None


def checked(entries: Iterable[dict[str, Any]], roots: Roots) -> tuple[list[Change], list[str]]:
    """The entries that name a setting this module tunes, at its own path, with a valid value;
    and a line for each refused one (never written)."""
    good: list[Change] = []
    refused: list[str] = []
    for entry in entries:
        try:
            change = change_from_dict(entry)
        except TuneError as exc:
            refused.append(str(exc))
            continue
        if isinstance(change, FileWrite):
            problem = _file_problem(change, roots)
        else:
            problem = _feature_problem(change)
        if problem is None:
            good.append(change)
        else:
            refused.append(f"refused to restore {change.describe(back=True)}: {problem}")
    return good, refused


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
        folder: Path | None,
        requested: bool,
        roots: Roots | None = None,
        io: Io | None = None,
        busy_sample_s: float = BUSY_SAMPLE_S,
    ) -> None:
        self.roots = roots or Roots()
        self.io: Io = io or SystemIo()
        self.busy_sample_s = busy_sample_s
        self.log = TuneLog(requested=requested)
        #: the journal's folder: the machine's private state folder unless given (tests)
        self.folder = folder
        self.journal = Journal(Path(RESTORE_FILE), os.getpid(),
                               start_time(self.roots.procfs, os.getpid()))  # fmt: skip
        self.lock: FileLock | None = None
        #: changes applied, or being applied when an interrupt came (it may have taken effect)
        self._touched: list[Change] = []
        self._restored = False

    @property
    def requested(self) -> bool:
        return self.log.requested

    def _locate(self) -> Path:
        """The journal's path in the private folder (made and checked), and its lock."""
        if self.lock is None:
            try:
                folder = state_dir(base=self.folder) if self.folder else state_dir("tune")
            except ConfigError as exc:
                raise TuneError(str(exc)) from None
            self.journal.path = folder / RESTORE_FILE
            self.lock = FileLock(folder / LOCK_FILE)
        return self.journal.path

    def recover(self) -> None:
        """Put back what a session that died left changed; refuse to tune beside a live one.

        Only the machine's private journal is read, and only entries that pass
        :func:`checked` are written back; a refused entry is reported, never written.
        """
        path = self._locate()
        assert self.lock is not None
        if not self.lock.acquire():  # a live session tuned this machine
            if self.requested:
                holders = ", ".join(describe_pid(p) for p in lock_holders(self.lock.path.stat()))
                raise TuneError(
                    f"pytest-ssd ({holders or 'another session'}) has tuned this machine and is"
                    f" still running ({path}): let it finish before --ssd-tune"
                )
            return
        if path.exists():
            left, entries = Journal.load(path)
            good, refused = checked(entries, self.roots)
            done, failed = restore_all(good, self.io)
            self.log.recovered = [f"{line} (left by pid {left.pid})" for line in done]
            self.log.recovered += [f"{line} (left by pid {left.pid})" for line in refused]
            if failed:
                raise TuneError(f"cannot restore what pid {left.pid} left changed: {failed[0]}")
            path.unlink()
        if not self.requested:
            self.lock.release()  # only a session that tunes holds the machine

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
        self._locate()
        assert self.lock is not None
        if not self.lock.held and not self.lock.acquire():
            raise TuneError(f"another session holds {self.lock.path}: let it finish first")
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
        if self.lock is not None:  # a file left (a setting not back) is the next session's
            self.lock.release()

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
