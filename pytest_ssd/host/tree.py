"""A machine's settings and facts, read there in one command into a copy, and recorded.

A device is measured under its machine's CPU governor, boost, transparent huge pages,
ASLR, I/O scheduler and NVMe power settings.  One shell command on the machine (this
one or a test host alike) prints every file the readers declare (:data:`.settings.READS`,
:data:`.facts.READS`, :data:`.journal.READS`; :mod:`pytest_ssd.machine.snapshot`), with
two samples of ``/proc/*/stat`` some time apart; they are written into a small copy of
the machine's ``/sys`` and ``/proc``, and :meth:`HostRecord.read` reads the copy.
``nvme get-feature`` (APST, power state) runs there.  A test host's readings name the
host, and each source names the machine's path, not the copy's.  ``--ssd-tune``
(:mod:`.tune`) plans its changes on the copy and writes them to the machine's own files.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.host import facts, journal, record
from pytest_ssd.host.io import Io, MachineIo, Roots, TuneError, read_attribute
from pytest_ssd.host.record import HostRecord, device_settings
from pytest_ssd.host.settings import Reading, host_settings
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.snapshot import Reads, Snapshot, SnapshotError, parse, take
from pytest_ssd.proc.sweep import pid_alive

#: every file the record, the tuning and a journal's checks read on a host
READS: Reads = record.READS | journal.READS


@dataclass(frozen=True)
class Tree(Snapshot):
    """A copy of a host's files: *now* (the second process sample), and the first."""

    @property
    def now(self) -> Roots:
        return Roots(sysfs=self.root / "sys", procfs=self.root / "proc", dev=Path("/dev"))

    @property
    def sample(self) -> Roots:
        return Roots(
            sysfs=self.root / "sys", procfs=self.root / "sample" / "proc", dev=Path("/dev")
        )


#: where copies are made when it is there: in memory (a copy of every process's ``stat``
#: is hundreds of small files, 10x slower to make on a disk)
MEMORY = Path("/dev/shm")


#: a copy's folder: ``ssd-copy-PID-RANDOM``, PID the session's that made it
PREFIX = "ssd-copy-"


def scratch(parent: Path | None = None) -> tempfile.TemporaryDirectory[str]:
    """A private temporary folder for copies, removed on exit (in memory when it can be).

    The folders of sessions that died without removing theirs (``kill -9`` while a copy was
    open) are removed first: this user's, named by a pid no process has any more."""
    if parent is None:
        memory = MEMORY.is_dir() and os.access(MEMORY, os.W_OK | os.X_OK)
        parent = MEMORY if memory else Path(tempfile.gettempdir())
    _remove_dead_copies(parent)
    return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-", dir=parent)


def _remove_dead_copies(parent: Path) -> None:
    """Remove the copies in *parent* whose session is gone."""
    for old in parent.glob(f"{PREFIX}*-*"):
        pid = old.name.removeprefix(PREFIX).partition("-")[0]
        if not pid.isdecimal() or pid_alive(int(pid)):
            continue
        try:
            info = old.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(old, ignore_errors=True)


def _tree(copy: Snapshot) -> Tree:
    return Tree(copy.root, copy.marks, copy.places, copy.nodes)


def copy_tree(text: str, root: Path) -> Tree:
    """Write the snapshot's output under *root*, as the host's ``/sys`` and ``/proc``."""
    try:
        return _tree(parse(text, READS, root))
    except SnapshotError as exc:
        raise TuneError(str(exc)) from None


def read_tree(machine: Machine, root: Path, busy_sample_s: float = 0.0) -> Tree:
    """Copy the host's files the record and the tuning read, under *root*."""
    try:
        return _tree(take(machine, READS, root, seconds=busy_sample_s, what="settings"))
    except SnapshotError as exc:
        raise TuneError(str(exc)) from None


def _on_host(reading: Reading, root: Path, label: str | None) -> Reading:
    """*reading* as the machine's: its paths the machine's, a test host's named by it."""
    source = reading.source.replace(f"{root}/sample/", "/").replace(f"{root}/", "/")
    shown = f"{source} on {label}" if label else source
    return dataclasses.replace(reading, source=shown, host=label)


def _session(tree: Tree) -> int:
    """The session's process on the machine, whose descendants are not "other" processes:
    the one the copy names (read in process), else the parent of the script that read it,
    else the script itself."""
    if "session" in tree.marks:
        return int(tree.marks["session"])
    pid = int(tree.marks.get("pid") or 0)
    text = read_attribute(tree.now.procfs / str(pid) / "stat") or ""
    fields = text.rpartition(")")[2].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdecimal() else pid


def host_readings(
    tree: Tree,
    machine: Machine,
    devices: Mapping[str, DeviceIdentity],
    busy_sample_s: float,
    io: Io | None = None,
) -> list[Reading]:
    """The record's readings of the host from *tree* (read with *busy_sample_s*)."""
    io = io or MachineIo(machine)
    tunables = [*host_settings(tree.now), *device_settings(tree.now, io, devices)]
    busy = facts.busy_between(
        facts.snapshot(tree.sample.procfs),
        facts.snapshot(tree.now.procfs),
        busy_sample_s,
        me=_session(tree),
        ticks=int(tree.marks.get("ticks") or facts.TICKS),
        procfs=Path("/proc"),
    )
    record = HostRecord.read(tree.now, io, tunables, devices, busy=busy)
    return [_on_host(r, tree.root, machine.host) for r in record.readings]


def read_host(
    machine: Machine,
    devices: Mapping[str, DeviceIdentity],
    busy_sample_s: float = facts.BUSY_SAMPLE_S,
) -> list[Reading]:
    """The record's readings of *machine* for its *devices*."""
    with scratch() as tmp:
        tree = read_tree(machine, Path(tmp), busy_sample_s)
        return host_readings(tree, machine, devices, busy_sample_s)
