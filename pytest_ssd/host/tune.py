"""--ssd-tune: apply METHOD §9's settings for the session and put every one of them back.

The restore journal lives in the machine's private state folder
(``/var/lib/pytest-ssd/tune/restore.json``, :mod:`pytest_ssd.statedir`), never in a
report folder: a session runs the recovery as root, and whatever it reads back it
writes to the kernel.  The journal (mode 0600) is written *before* the first change:
every planned change with its original value.  Its owner holds the folder's lock
(``tune.lock``) for the session; a journal whose lock can be taken belongs to a session
that died (killed, crashed, power loss), and the next session puts those settings back
before doing anything else.  An entry is only ever restored to a place this package
computes itself for the setting the entry names, with a value the kernel offers there
(:mod:`pytest_ssd.host.journal`), and no file is ever created.  Only the controller
tunes; xdist workers never touch a setting.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.node import lock_holders
from pytest_ssd.device.openers import describe_pid
from pytest_ssd.errors import ConfigError, SsdError, present
from pytest_ssd.host import settings
from pytest_ssd.host.changes import Change
from pytest_ssd.host.facts import BUSY_SAMPLE_S
from pytest_ssd.host.io import Io, Roots, SystemIo, TuneError
from pytest_ssd.host.journal import Journal, checked, start_time
from pytest_ssd.host.record import HostRecord, TuneLog, device_settings
from pytest_ssd.host.settings import Reading, Setting
from pytest_ssd.statedir import FileLock, state_dir

RESTORE_FILE = "restore.json"
LOCK_FILE = "tune.lock"


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


def put_back(
    good: Iterable[Change], refused: Iterable[str], io: Io, log: TuneLog, owner: str
) -> None:
    """Restore a dead session's checked entries *good*; log them and the *refused* ones.

    *owner* says whose they were ("pid 1234"); raises :class:`TuneError` when a setting
    cannot be put back (its journal stays for the next session).
    """
    done, failed = restore_all(good, io)
    log.recovered += [f"{line} (left by {owner})" for line in done]
    log.refused += [f"{line} (left by {owner})" for line in refused]
    if failed:
        raise TuneError(f"cannot restore what {owner} left changed: {failed[0]}")


def apply_all(
    planned: Iterable[Change],
    io: Io,
    log: TuneLog,
    touched: list[Change],
    restore: Callable[[], None],
) -> None:
    """Apply *planned* in order, each in *touched* from the moment it is tried (an
    interrupt may land after the kernel took it); on any failure *restore* everything."""
    try:
        for change in planned:
            touched.append(change)
            try:
                change.apply(io)
            except SsdError:
                touched.pop()  # refused: nothing changed
                raise
            log.changed.append(change.describe())
    except BaseException as exc:
        restore()
        if isinstance(exc, SsdError):
            raise TuneError(f"--ssd-tune: {exc}; every setting changed is back") from None
        raise


class MachineTuner(ABC):
    """--ssd-tune on one machine, this one or a test host: one interface for both.

    The session holds one per machine a device is on; each keeps its lock, its journal
    and its settings on its machine (the device's site makes it).
    """

    log: TuneLog

    @property
    @abstractmethod
    def label(self) -> str | None:
        """The machine in the record and the summary; None: this machine."""

    @abstractmethod
    def recover(self) -> None:
        """Put back what a session that died left changed; refuse to tune beside a live one."""

    @abstractmethod
    def start(self, devices: Mapping[str, DeviceIdentity], warnings: list[str]) -> list[Reading]:
        """Tune (if asked) and read what the run will run under there, for its *devices*.

        Raises :class:`TuneError` when tuning was asked for and cannot be done; what
        only weakens the record goes to *warnings*.
        """

    @abstractmethod
    def restore(self) -> None:
        """Put back everything this session changed there; idempotent."""

    @abstractmethod
    def summary_lines(self) -> list[str]:
        """What tuning did, for the terminal summary."""


class Tuner(MachineTuner):
    """This machine's settings for one session (controller only)."""

    def __init__(
        self,
        folder: Path | None,
        requested: bool,
        roots: Roots | None = None,
        io: Io | None = None,
        busy_sample_s: float = BUSY_SAMPLE_S,
    ) -> None:
        self.roots = roots or Roots()
        self.io: Io = io or SystemIo(self.roots)
        self.busy_sample_s = busy_sample_s
        self.log = TuneLog(requested=requested)
        #: the journal's folder: the machine's private state folder unless given (tests)
        self.folder = folder
        self.journal = Journal(
            Path(RESTORE_FILE), os.getpid(), start_time(self.roots.procfs, os.getpid())
        )
        self.lock: FileLock | None = None
        #: changes applied, or being applied when an interrupt came (it may have taken effect)
        self._touched: list[Change] = []
        self._restored = False

    @property
    def requested(self) -> bool:
        return self.log.requested

    @property
    def label(self) -> str | None:
        return None

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
        lock = present(self.lock, "the tune lock")
        if not lock.acquire():  # a live session tuned this machine
            if self.requested:
                raise self._busy()
            return
        try:
            if os.path.lexists(path):
                self._put_back(path)
        except BaseException:
            lock.release()
            raise
        if not self.requested:
            lock.release()  # only a session that tunes holds the machine

    def _put_back(self, path: Path) -> None:
        left, entries = Journal.load(path)
        good, refused = checked(entries, self.roots)
        put_back(good, refused, self.io, self.log, f"pid {left.pid}")
        path.unlink()

    def _busy(self) -> TuneError:
        """One line naming the live session that holds the lock."""
        pids = lock_holders(present(self.lock, "the tune lock").path.stat())
        if not pids:  # /proc/locks did not say: its journal does, if its writer still runs
            try:
                owner, _ = Journal.load(self.journal.path)
                pids = [owner.pid] if owner.running(self.roots.procfs) else []
            except TuneError:
                pass
        holders = ", ".join(describe_pid(p) for p in pids) or "another session"
        return TuneError(
            f"pytest-ssd ({holders}) has tuned this machine and is still running"
            f" ({self.journal.path}): let it finish before --ssd-tune"
        )

    def settings(self, devices: Mapping[str, DeviceIdentity]) -> list[Setting]:
        return [*settings.host_settings(self.roots), *device_settings(self.roots, self.io, devices)]

    def start(self, devices: Mapping[str, DeviceIdentity], warnings: list[str]) -> list[Reading]:
        return list(self.record(devices).readings)

    def record(self, devices: Mapping[str, DeviceIdentity]) -> HostRecord:
        """Tune (if asked) and read what the run will run under, with what tuning did."""
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
        lock = present(self.lock, "the tune lock")
        if not lock.held and not lock.acquire():
            raise self._busy()
        self.journal.changes = planned
        self.journal.write()  # before the first change
        apply_all(planned, self.io, self.log, self._touched, self.restore)

    def restore(self) -> None:
        """Put back everything this session changed; idempotent; keeps the file on failure."""
        if not self._restored and self.journal.changes:
            self._restored = True
            self.log.restored, self.log.failed = restore_all(self._touched, self.io)
            if not self.log.failed:
                self.journal.path.unlink(missing_ok=True)
        if self.lock is not None:  # a file left (a setting not back) is the next session's
            self.lock.release()

    def summary_lines(self) -> list[str]:
        """What tuning did, for the terminal summary."""
        return tune_lines(self.log, str(self.journal.path))


def tune_lines(log: TuneLog, kept: str) -> list[str]:
    """What tuning did per :class:`TuneLog`; what could not be put back is *kept* there."""
    lines = [f"recovered: {line}" for line in log.recovered]
    lines += [f"refused to restore: {line}" for line in log.refused]
    if log.requested and not (log.changed or log.skipped):
        lines.append("--ssd-tune: every available setting was already as recommended")
    lines += [f"--ssd-tune changed: {line}" for line in log.changed]
    lines += [f"--ssd-tune could not set: {line}" for line in log.skipped]
    lines += [f"--ssd-tune restored: {line}" for line in log.restored]
    lines += [f"--ssd-tune could NOT restore: {line} (kept in {kept})" for line in log.failed]
    return lines


def combined(tuners: Sequence[MachineTuner]) -> TuneLog:
    """Every machine's tune log in one, a host's lines named by it (the record's)."""
    both = TuneLog(requested=any(t.log.requested for t in tuners))
    for tuner in tuners:
        for name in ("recovered", "refused", "changed", "skipped"):
            prefix = f"{tuner.label}: " if tuner.label else ""
            lines = [f"{prefix}{line}" for line in getattr(tuner.log, name)]
            setattr(both, name, [*getattr(both, name), *lines])
    return both
