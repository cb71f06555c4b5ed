"""--ssd-tune on a test host: the same settings, journal and lock as here, kept on the host.

Everything --ssd-tune relies on here lives on the host, so that the host alone
decides, whoever tunes it (a session on the host itself, or controllers over SSH):

* **the lock**: ``flock`` on the host's ``<state>/tune/tune.lock`` (``/var/lib/pytest-ssd``
  for root, as here), a :class:`~pytest_ssd.machine.flock.HostFlock` held on an SSH
  channel for the session (the device locks' protocol): it ends with the session, a
  ``kill -9`` or a lost connection;
* **the journal**: ``<state>/tune/restore.json`` on the host, written (0600, ``sync``\\ ed,
  renamed into place) before the first change, in the format a session on the host
  reads: its pid and start time are the lock holder's on the host;
* **recovery**: a journal whose lock is free belongs to a session that died; the next
  session that reaches the host puts it back before anything else, through the same
  checks as here (:func:`~pytest_ssd.host.journal.checked`, on a copy of the host's
  files: only a file this package computes for the setting, with a value the kernel
  offers there).

The settings are read from a copy of the host's files (:mod:`.remote`); a write goes
to the host's own path, resolved there, only inside ``/sys`` or ``/proc``, only to an
existing regular file.  NVMe APST is switched with ``nvme set-feature`` there, its
transition table sent along (:meth:`~.remote.HostIo.nvme`); a journal entry for it is
accepted only for the kernel's own node, as the host's ``stat`` and sysfs describe it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import SsdError
from pytest_ssd.host import facts
from pytest_ssd.host.changes import Change, FileWrite
from pytest_ssd.host.io import TuneError
from pytest_ssd.host.journal import Journal, checked
from pytest_ssd.host.record import TuneLog, device_settings
from pytest_ssd.host.remote import HostIo, Tree, host_readings, read_tree
from pytest_ssd.host.settings import Reading, host_settings
from pytest_ssd.host.tune import (
    MachineTuner,
    apply_all,
    put_back,
    restore_all,
    tune_lines,
)
from pytest_ssd.machine.flock import CONFLICT, HostFlock, hold_script
from pytest_ssd.machine.machine import Machine, SshMachine
from pytest_ssd.machine.ssh import MARK

TIMEOUT_S = 60.0
#: the host's state folder ``$d`` made and checked: a real folder of the user, private
PRIVATE = """
d=/var/lib/pytest-ssd
[ "$(id -u)" = 0 ] || d="${XDG_STATE_HOME:-$HOME/.local/state}/pytest-ssd"
d="$d/tune"
(umask 077; mkdir -p "$d") || exit 3
[ -d "$d" ] && [ ! -L "$d" ] || { echo "$d is not a folder" >&2; exit 3; }
set -- $(stat -c '%u %a' "$d")
[ "$1" = "$(id -u)" ] || { echo "$d is owned by uid $1" >&2; exit 3; }
case $2 in *[2367]?|*[2367]) echo "$d is writable by others (mode $2)" >&2; exit 3 ;; esac
"""
#: ``sh -c HOLD``: the lock, its holder's pid and start time on the host
HOLD = f"""{PRIVATE}
echo "{MARK}dir $d"
{hold_script('"$d/tune.lock"')}"""
#: ``sh -c READ``: the journal, if there is one (a regular file of the user, private)
READ = f"""{PRIVATE}
f="$d/restore.json"
[ -e "$f" ] || [ -L "$f" ] || exit 0
[ -f "$f" ] && [ ! -L "$f" ] || {{ echo "$f is not a file" >&2; exit 3; }}
set -- $(stat -c '%u %a' "$f")
[ "$1" = "$(id -u)" ] || {{ echo "$f is owned by uid $1" >&2; exit 3; }}
case $2 in *[2367]?|*[2367]) echo "$f is writable by others (mode $2)" >&2; exit 3 ;; esac
echo "{MARK}journal"; cat -- "$f"
"""
#: ``sh -c WRITE`` with the journal on its input: durable before it counts
WRITE = f"""{PRIVATE}
t="$d/.restore.json.$$.tmp"
(umask 077; cat > "$t") && sync && mv -f "$t" "$d/restore.json" && sync
"""
DROP = f'{PRIVATE}\nrm -f "$d/restore.json"'
#: ``sh -c SET sh PATH VALUE``: an existing regular file of /sys or /proc, as resolved there
SET = """
r=$(readlink -e -- "$1") || { echo "$1: no such file (no file is ever created)" >&2; exit 3; }
case $r in /sys/*|/proc/*) ;; *) echo "$1 is $r: not in /sys or /proc" >&2; exit 3 ;; esac
[ -f "$r" ] || { echo "$r: not a kernel attribute" >&2; exit 3; }
printf %s "$2" > "$r"
"""


def _run(machine: Machine, script: str, *args: str, stdin: str | None = None, what: str) -> str:
    argv = ["sh", "-c", script, "sh", *args]
    done = machine.run(argv, timeout=TIMEOUT_S, stdin=stdin, name="tune")
    if done.returncode != 0:
        raise TuneError(f"{machine.where}: cannot {what}: {done.last_error_line()}")
    return done.stdout


class HostWrites(HostIo):
    """nvme-cli and kernel attributes of a host: every write resolved and checked there."""

    def write(self, path: Path, value: str) -> None:
        _run(self.machine, SET, str(path), value, what=f"write {value!r} to {path}")


@dataclass
class HostTuner(MachineTuner):
    """The settings of one test host for one session (controller only)."""

    machine: SshMachine
    requested: bool
    #: where the held lock's channel keeps its output
    artifacts: Path
    busy_sample_s: float = facts.BUSY_SAMPLE_S
    log: TuneLog = field(default_factory=TuneLog)
    journal: str = ""
    _lock: HostFlock | None = None
    _holder: dict[str, str] = field(default_factory=dict)
    _planned: list[Change] = field(default_factory=list)
    _touched: list[Change] = field(default_factory=list)
    _restored: bool = False
    #: recovery ran (None), or why the journal was not checked
    _recovered: str | None = "not yet"

    def __post_init__(self) -> None:
        self.log.requested = self.requested
        self.io = HostWrites(self.machine)

    @property
    def label(self) -> str:
        return self.machine.host or self.machine.where

    # --- the lock and the journal -------------------------------------------------------

    def _acquire(self) -> bool:
        """Take the host's tune lock (False: a live session holds it)."""
        lock = HostFlock(self.machine.ssh, HOLD, (), self.artifacts, "tune-lock")
        failed = lock.acquire(TIMEOUT_S)
        if failed is None:
            self._lock, self._holder = lock, lock.marks
            self.journal = f"{self.label}:{lock.marks['dir']}/restore.json"
            return True
        if failed.returncode == CONFLICT:
            return False
        why = failed.last_error_line()
        raise TuneError(f"{self.machine.where}: cannot take the tune lock: {why}")

    def _release(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.release()

    def _journal(self) -> tuple[Journal, list[dict[str, Any]]] | None:
        """The host's journal and its raw entries, if there is one (read under the lock)."""
        text = _run(self.machine, READ, what="read its tune journal")
        if f"{MARK}journal" not in text:
            return None
        return Journal.parse(text.split(f"{MARK}journal", 1)[1], Path(self.journal))

    # --- the session ----------------------------------------------------------------------

    def recover(self) -> None:
        """Take the host's lock, put back what a dead session left; refuse beside a live one.

        A session that does not tune and cannot reach the journal goes on (a warning at
        :meth:`start`); the lock is kept only by a session that tunes.
        """
        if self._recovered != "not yet":
            return
        self._recovered = None
        try:
            mine = self._acquire()
        except SsdError as exc:
            if self.requested:
                raise
            self._recovered = f"{self.label}: its tune journal was not checked: {exc}"
            return
        if not mine:
            if self.requested:
                raise TuneError(
                    f"{self.machine.where}: another pytest-ssd session has tuned this host and"
                    " is still running: let it finish before --ssd-tune"
                )
            return
        try:
            left = self._journal()
            if left is not None:
                with tempfile.TemporaryDirectory(prefix="ssd-host-") as tmp:
                    self._recover(left, read_tree(self.machine, Path(tmp)))
        finally:
            if not self.requested:
                self._release()  # only a session that tunes holds the host

    def start(self, devices: Mapping[str, DeviceIdentity], warnings: list[str]) -> list[Reading]:
        """Recover (once), tune if asked, and read the host's settings.

        Raises :class:`TuneError` when tuning was asked for and cannot be done, or a dead
        session's settings cannot be put back (as here); a host whose settings cannot be
        read otherwise is a warning.
        """
        self.recover()
        if self._recovered is not None:
            warnings.append(self._recovered)
        with tempfile.TemporaryDirectory(prefix="ssd-host-") as tmp:
            if self.requested:
                try:
                    self._apply(read_tree(self.machine, Path(tmp) / "now"), devices)
                finally:
                    if not self._planned:
                        self._release()
            try:
                tree = read_tree(self.machine, Path(tmp) / "record", self.busy_sample_s)
                return host_readings(tree, self.machine, devices, self.busy_sample_s)
            except SsdError as exc:
                warnings.append(f"{self.label}: host settings not recorded: {exc}")
                return []

    def _recover(self, left: tuple[Journal, list[dict[str, Any]]], tree: Tree) -> None:
        """Put back a dead session's journal: its entries checked on a copy of the host."""
        journal, entries = left
        back, said = checked_on(tree, entries)
        put_back(back, said, self.io, self.log, f"pid {journal.pid} on {self.label}")
        _run(self.machine, DROP, what="remove its tune journal")

    def _apply(self, tree: Tree, devices: Mapping[str, DeviceIdentity]) -> None:
        tunables = [*host_settings(tree.now), *device_settings(tree.now, self.io, devices)]
        for setting in tunables:
            try:
                self._planned += [_to_host(c, tree) for c in setting.changes()]
            except TuneError as exc:
                self.log.skipped.append(str(exc).replace(f"{tree.root}/", "/"))
        if not self._planned:
            return
        pid, started = int(self._holder.get("pid") or 0), self._holder.get("started")
        text = Journal(Path(self.journal), pid, started, self._planned).text()
        _run(self.machine, WRITE, stdin=text, what="write its tune journal")
        apply_all(self._planned, self.io, self.log, self._touched, self.restore)

    def restore(self) -> None:
        """Put back everything this session changed on the host; idempotent."""
        if not self._restored and self._planned:
            self._restored = True
            self.log.restored, self.log.failed = restore_all(self._touched, self.io)
            if not self.log.failed:
                try:
                    _run(self.machine, DROP, what="remove its tune journal")
                except SsdError as exc:
                    self.log.failed.append(str(exc))
        self._release()  # a journal left (a setting not back) is the next session's

    def summary_lines(self) -> list[str]:
        return [f"{self.label}: {line}" for line in tune_lines(self.log, self.journal)]


def checked_on(tree: Tree, entries: list[dict[str, Any]]) -> tuple[list[Change], list[str]]:
    """A dead session's journal *entries* checked on *tree*, the copy of its host's files:
    the changes to put back at the host's paths, and one line for each entry refused.

    An entry's path is read where the copy's own rules put it (:meth:`Tree.read_path`): a
    path the copy cannot hold (not under /sys or /proc: no file --ssd-tune sets) is found
    absent, so :func:`~pytest_ssd.host.journal.checked` refuses the entry, naming the
    host's path; nothing outside the copy is ever read.
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
    """*change* at the host's own path (it was planned on the copy)."""
    if isinstance(change, FileWrite):
        return replace(change, path=tree.host_path(change.path))
    return change
