"""--ssd-tune: apply METHOD §9's settings for the session and put every one of them back.

One tuner per machine a device is in, this one or a test host alike: everything it
relies on lives on that machine, so that the machine alone decides, whoever tunes it
(a session there, or controllers over SSH):

* **the lock**: ``flock`` on ``<state>/tune/tune.lock`` in the machine's private state
  folder (``/var/lib/pytest-ssd`` for root, else ``$XDG_STATE_HOME/pytest-ssd``, or
  ``$PYTEST_SSD_STATE_DIR``: :mod:`pytest_ssd.statedir`), held for the session
  (:mod:`pytest_ssd.machine.statefolder`: by this process here, by a command a test host
  keeps running there): it ends with the session, a ``kill -9`` or a lost connection;
* **the journal**: ``<state>/tune/restore.json`` there, written (0600, ``sync``\\ ed,
  renamed into place) *before* the first change: every planned change with its original
  value, with the lock holder's pid and start time there;
* **recovery**: a journal whose lock is free belongs to a session that died (killed,
  crashed, power loss, a lost connection); the next session that reaches the machine puts
  it back before anything else (this machine's at the session's start, a host's when it
  is reached): an entry is only ever restored to a place this package computes itself
  for the setting the entry names, with a value the kernel offers there, checked on a
  copy of the machine's files (:func:`~pytest_ssd.host.journal.checked`), and no file is
  ever created.

The settings are read from a copy of the machine's files (:mod:`.tree`); a write goes
to the machine's own path, only to an existing regular file of ``/sys`` or ``/proc``
(:meth:`~pytest_ssd.machine.machine.Machine.write_attribute`); NVMe APST is switched
with ``nvme set-feature`` there, its transition table sent along.  Only the controller
tunes; xdist workers never touch a setting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.openers import describe
from pytest_ssd.errors import SsdError, present
from pytest_ssd.host import facts
from pytest_ssd.host.changes import Change, FileWrite
from pytest_ssd.host.io import Io, MachineIo, TuneError
from pytest_ssd.host.journal import Journal, checked
from pytest_ssd.host.record import TuneLog, device_settings
from pytest_ssd.host.settings import Reading, host_settings
from pytest_ssd.host.tree import Tree, host_readings, read_tree, scratch
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.statefolder import Busy, Private, StateError, StateFolder, state_folder

RESTORE_FILE = "restore.json"
LOCK_FILE = "tune.lock"
T = TypeVar("T")
#: a copy of the machine's files under a folder, its processes sampled over some seconds
Copier = Callable[[Path, float], Tree]


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


@dataclass
class Tuner:
    """The settings of one machine for one session (controller only).

    *folder*: the journal's folder (the tests' own), else the machine's state folder's
    ``tune``; *artifacts*: where the held lock keeps its output (a temporary folder when
    not given); *io* and *copy* (the tests' fakes) default to the machine's own.
    """

    machine: Machine
    requested: bool
    artifacts: Path | None = None
    folder: Path | None = None
    busy_sample_s: float = facts.BUSY_SAMPLE_S
    io: Io | None = None
    copy: Copier | None = None
    log: TuneLog = field(default_factory=TuneLog)
    #: the journal, as a message names it
    journal: str = ""
    #: the machine's state folder ``tune``: the lock and the journal
    _state: StateFolder | None = None
    #: the lock's holder there (pid, start time): the journal's writer
    _holder: tuple[int, str | None] | None = None
    #: the live sessions holding the lock, as the machine named them
    _holders: list[str] = field(default_factory=list)
    _planned: list[Change] = field(default_factory=list)
    #: changes applied, or being applied when an interrupt came (it may have taken effect)
    _touched: list[Change] = field(default_factory=list)
    _restored: bool = False
    #: recovery ran
    _recovered: bool = False

    def __post_init__(self) -> None:
        self.log.requested = self.requested
        if self.io is None:
            self.io = MachineIo(self.machine)
        self.journal = self._named(f"<state>/tune/{RESTORE_FILE}")
        self._state = state_folder(self.machine, "tune", self.folder, self.artifacts)

    @property
    def label(self) -> str | None:
        """The machine in the record and the summary; None: this machine."""
        return self.machine.host

    @property
    def _where(self) -> str:
        """The machine at the head of a message."""
        return self.machine.where or "this machine"

    def _named(self, path: str) -> str:
        return f"{self.label}:{path}" if self.label else path

    def _io(self) -> Io:
        return self.io or MachineIo(self.machine)

    def _copy(self, root: Path, seconds: float = 0.0) -> Tree:
        return (self.copy or self._read)(root, seconds)

    def _read(self, root: Path, seconds: float) -> Tree:
        return read_tree(self.machine, root, seconds)

    @property
    def _files(self) -> StateFolder:
        return present(self._state, "the tune state folder")

    def _do(self, what: str, step: Callable[[StateFolder], T]) -> T:
        """*step* on the machine's tune folder; a :class:`TuneError` saying *what* failed."""
        try:
            return step(self._files)
        except StateError as exc:
            raise TuneError(f"{self._where}: cannot {what}: {exc}") from None

    # --- the lock and the journal -------------------------------------------------------

    def _acquire(self) -> Private | None:
        """Take the machine's tune lock: the journal read under it (None: a live session
        holds the lock)."""
        taken = self._do("take the tune lock", lambda files: files.lock(LOCK_FILE, RESTORE_FILE))
        if taken.folder:
            self.journal = self._named(f"{taken.folder}/{RESTORE_FILE}")
        if isinstance(taken, Busy):
            self._holders = [describe(pid, command) for pid, command in taken.holders]
            return None
        self._holder = (taken.pid, taken.started)
        return taken.found

    def _release(self) -> None:
        self._holder = None
        self._files.release()

    def release_lock(self) -> None:
        """Let the lock go without restoring anything (what the kernel does to a killed
        session's lock)."""
        self._release()

    def _journal(self, found: Private | None = None) -> tuple[Journal, list[dict[str, Any]]] | None:
        """The machine's journal and its raw entries, if there is one: *found* (read under
        the lock), else read."""
        if found is None:
            found = self._do("read its tune journal", lambda files: files.read(RESTORE_FILE))
        if found.refused:
            raise TuneError(f"{self._where}: cannot read its tune journal: {found.refused}")
        if found.text is None:
            return None
        return Journal.parse(found.text, Path(self.journal))

    def _busy(self) -> TuneError:
        """One line naming the live session that holds the lock (or its journal's writer)."""
        holders = list(self._holders)
        if not holders:
            try:
                left = self._journal()
            except TuneError:
                left = None
            holders = [f"pid {left[0].pid}"] if left else []
        who = f" ({', '.join(holders)})" if holders else ""
        return TuneError(
            f"pytest-ssd{who} has tuned {self._where} and is still running ({self.journal}):"
            " let it finish before --ssd-tune"
        )

    # --- the session ----------------------------------------------------------------------

    def recover(self) -> None:
        """Take the machine's lock, put back what a dead session left; refuse beside a live
        one (once).

        A journal that cannot be checked refuses the session, tuning or not; the lock is
        kept only by a session that tunes.
        """
        if self._recovered:
            return
        self._recovered = True
        found = self._acquire()
        if found is None:
            if self.requested:
                raise self._busy()
            return
        try:
            left = self._journal(found)
            if left is not None:
                with scratch() as tmp:
                    self._recover(left, self._copy(Path(tmp)))
        finally:
            if not self.requested:
                self._release()  # only a session that tunes holds the machine

    def start(self, devices: Mapping[str, DeviceIdentity], warnings: list[str]) -> list[Reading]:
        """Recover (once), tune if asked, and read what the run will run under there.

        Raises :class:`TuneError` when tuning was asked for and cannot be done, or a dead
        session's settings cannot be put back; settings that cannot be read otherwise are
        a warning.
        """
        self.recover()
        with scratch() as tmp:
            if self.requested:
                try:
                    self._apply(self._copy(Path(tmp) / "now"), devices)
                finally:
                    if not self._planned:
                        self._release()
            try:
                tree = self._copy(Path(tmp) / "record", self.busy_sample_s)
                return host_readings(tree, self.machine, devices, self.busy_sample_s, self._io())
            except SsdError as exc:
                warnings.append(f"{self.label or 'this machine'}: settings not recorded: {exc}")
                return []

    def _recover(self, left: tuple[Journal, list[dict[str, Any]]], tree: Tree) -> None:
        """Put back a dead session's journal: its entries checked on a copy of the machine."""
        journal, entries = left
        back, said = checked_on(tree, entries)
        on = f" on {self.label}" if self.label else ""
        put_back(back, said, self._io(), self.log, f"pid {journal.pid}{on}")
        self._do("remove its tune journal", lambda files: files.remove(RESTORE_FILE))

    def _apply(self, tree: Tree, devices: Mapping[str, DeviceIdentity]) -> None:
        io = self._io()
        tunables = [*host_settings(tree.now), *device_settings(tree.now, io, devices)]
        for setting in tunables:
            try:
                self._planned += [_to_host(c, tree) for c in setting.changes()]
            except TuneError as exc:
                self.log.skipped.append(tree.shown(str(exc)))
        if not self._planned:
            return
        pid, started = self._holder or (0, None)
        text = Journal(Path(self.journal), pid, started, self._planned).text()
        # before the first change
        self._do("write its tune journal", lambda files: files.write(RESTORE_FILE, text))
        apply_all(self._planned, io, self.log, self._touched, self.restore)

    def restore(self) -> None:
        """Put back everything this session changed there; idempotent; keeps the journal
        when a setting is not back (the next session's)."""
        if not self._restored and self._planned:
            self._restored = True
            self.log.restored, self.log.failed = restore_all(self._touched, self._io())
            if not self.log.failed:
                try:
                    self._do("remove its tune journal", lambda files: files.remove(RESTORE_FILE))
                except SsdError as exc:
                    self.log.failed.append(str(exc))
        self._release()

    def summary_lines(self) -> list[str]:
        """What tuning did, for the terminal summary."""
        prefix = f"{self.label}: " if self.label else ""
        return [f"{prefix}{line}" for line in tune_lines(self.log, self.journal)]


def checked_on(tree: Tree, entries: list[dict[str, Any]]) -> tuple[list[Change], list[str]]:
    """A dead session's journal *entries* checked on *tree*, the copy of its machine's
    files: the changes to put back at the machine's paths, and one line for each refused.

    An entry's path is read where the copy's own rules put it (:meth:`Tree.read_path`): a
    path the copy cannot hold (not under /sys or /proc: no file --ssd-tune sets) is found
    absent, so :func:`~pytest_ssd.host.journal.checked` refuses the entry, naming the
    machine's path; nothing outside the copy is ever read.
    """
    host = {str(tree.read_path(str(e["path"]))): str(e["path"]) for e in entries if "path" in e}
    mapped = [
        {**e, "path": str(tree.read_path(str(e["path"])))} if "path" in e else e for e in entries
    ]
    good, refused = checked(mapped, tree.now, tree.node_of)
    return [_to_host(c, tree) for c in good], [tree.shown(_named(line, host)) for line in refused]


def _named(line: str, host: dict[str, str]) -> str:
    """*line* naming the journal's own paths (*host*: each one's by its place in the copy)."""
    for copy in sorted(host, key=len, reverse=True):
        line = line.replace(copy, host[copy])
    return line


def _to_host(change: Change, tree: Tree) -> Change:
    """*change* at the machine's own path (it was planned on the copy)."""
    if isinstance(change, FileWrite):
        return replace(change, path=tree.host_path(change.path))
    return change


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


def combined(tuners: Sequence[Tuner]) -> TuneLog:
    """Every machine's tune log in one, a host's lines named by it (the record's)."""
    both = TuneLog(requested=any(t.log.requested for t in tuners))
    for tuner in tuners:
        for name in ("recovered", "refused", "changed", "skipped"):
            prefix = f"{tuner.label}: " if tuner.label else ""
            lines = [f"{prefix}{line}" for line in getattr(tuner.log, name)]
            setattr(both, name, [*getattr(both, name), *lines])
    return both
