"""The settings and facts of a test host, read there in one command and recorded like ours.

A device on a test host is measured under that host's CPU governor, boost,
transparent huge pages, ASLR, I/O scheduler and NVMe power settings, not under
the controller's.  One shell command on the host prints every file the readers
declare (:data:`.settings.READS`, :data:`.facts.READS`, :data:`.journal.READS`;
:mod:`pytest_ssd.machine.snapshot`), with two samples of ``/proc/*/stat`` half a
second apart; they are written into a small copy of the host's ``/sys`` and
``/proc``, so :meth:`HostRecord.read` reads it exactly as it reads this machine.
``nvme get-feature`` (APST, power state) runs on the host.  Each reading names
the host, and its source names the host's path, not the copy's.  Reading writes
nothing on the host; :class:`HostIo` refuses writes.  ``--ssd-tune`` on a host
(:mod:`.remote_tune`) writes there: its journal and lock in the host's private
state folder, the settings to the host's own ``/sys`` and ``/proc`` files, APST
with ``nvme set-feature`` (its data buffer in a temporary file, removed after).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.nvme import INSTALL_HINT, NVME_TIMEOUT_S
from pytest_ssd.host import facts, journal, record
from pytest_ssd.host.io import Roots, TuneError
from pytest_ssd.host.record import HostRecord, TuneLog, device_settings
from pytest_ssd.host.settings import Reading, host_settings
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.snapshot import Reads, Snapshot, SnapshotError, parse, take
from pytest_ssd.proc import Completed

#: every file the record, the tuning and a journal's checks read on a host
READS: Reads = record.READS | journal.READS
DATA = "--data="
#: ``sh -c UPLOAD sh OCTAL NVME ARGS...``: the buffer (every byte ``\\ooo``) to a private
#: temporary file on the host, given to nvme-cli as ``--data``, removed afterwards
UPLOAD = """
t=$(mktemp) || exit 3
printf "$1" > "$t" || { rm -f "$t"; exit 3; }
shift
"$@" "--data=$t"; r=$?
rm -f "$t"
exit $r
"""


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


class HostIo:
    """nvme-cli on the host; writes refused (the host's settings are only read)."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine

    def write(self, path: Path, value: str) -> None:
        raise TuneError(f"{self.machine.where}: --ssd-tune does not change a test host's settings")

    def nvme(self, args: list[str]) -> Completed:
        """nvme-cli there; a ``--data=FILE`` of this machine goes along, to a temporary file."""
        nvme = self.machine.which("nvme", INSTALL_HINT)
        data = [a for a in args if a.startswith(DATA)]
        if not data:
            return self.machine.run([nvme, *args], timeout=NVME_TIMEOUT_S, name="nvme")
        payload = Path(data[0].removeprefix(DATA)).read_bytes()
        octal = "".join(f"\\{byte:03o}" for byte in payload)
        rest = [a for a in args if not a.startswith(DATA)]
        argv = ["sh", "-c", UPLOAD, "sh", octal, nvme, *rest]
        return self.machine.run(argv, timeout=NVME_TIMEOUT_S, name="nvme")


def _on_host(reading: Reading, root: Path, label: str) -> Reading:
    """*reading* as the host's: its paths the host's, machine-wide ones named by host."""
    source = reading.source.replace(f"{root}/sample/", "/").replace(f"{root}/", "/")
    return dataclasses.replace(reading, source=f"{source} on {label}", host=label)


def host_readings(
    tree: Tree,
    machine: Machine,
    devices: Mapping[str, DeviceIdentity],
    busy_sample_s: float,
    tune: TuneLog | None = None,
) -> list[Reading]:
    """The record's readings of the host from *tree* (read with *busy_sample_s*)."""
    io = HostIo(machine)
    tunables = [*host_settings(tree.now), *device_settings(tree.now, io, devices)]
    busy = facts.busy_between(
        facts.snapshot(tree.sample.procfs),
        facts.snapshot(tree.now.procfs),
        busy_sample_s,
        me=int(tree.marks.get("pid") or 0),
        ticks=int(tree.marks.get("ticks") or facts.TICKS),
        procfs=Path("/proc"),
    )
    record = HostRecord.read(tree.now, io, tunables, devices, busy=busy, tune=tune)
    label = machine.host or machine.where
    return [_on_host(r, tree.root, label) for r in record.readings]


def read_host(
    machine: Machine,
    devices: Mapping[str, DeviceIdentity],
    busy_sample_s: float = facts.BUSY_SAMPLE_S,
) -> list[Reading]:
    """The record's readings of the test host *machine* for its *devices*."""
    with tempfile.TemporaryDirectory(prefix="ssd-host-") as tmp:
        tree = read_tree(machine, Path(tmp), busy_sample_s)
        return host_readings(tree, machine, devices, busy_sample_s)
