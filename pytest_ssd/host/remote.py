"""The settings and facts of a test host, read there in one command and recorded like ours.

A device on a test host is measured under that host's CPU governor, boost,
transparent huge pages, ASLR, I/O scheduler and NVMe power settings, not under
the controller's.  One shell command on the host prints every file the record
reads (:mod:`.settings`, :mod:`.facts`) and two samples of ``/proc/*/stat``
half a second apart; :func:`copy_tree` writes them into a small copy of the
host's ``/sys`` and ``/proc``, so :meth:`HostRecord.read` reads it exactly as
it reads this machine.  ``nvme get-feature`` (APST, power state) runs on the
host.  Each reading names the host, and its source names the host's path, not
the copy's.  Nothing is written on the host: ``--ssd-tune`` stays this
machine's.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.nvme import INSTALL_HINT, NVME_TIMEOUT_S
from pytest_ssd.host import facts
from pytest_ssd.host.io import Roots, TuneError
from pytest_ssd.host.record import HostRecord, TuneLog, device_settings
from pytest_ssd.host.settings import Reading, host_settings
from pytest_ssd.machine.machine import Machine
from pytest_ssd.machine.ssh import MARK
from pytest_ssd.proc import Completed

READ_TIMEOUT_S = 60.0
#: the machine-wide files the record reads (settings.py, facts.py), globs allowed
FILES = (
    "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor",
    "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_available_governors",
    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
    "/sys/devices/system/cpu/cpufreq/boost",
    "/sys/devices/system/cpu/intel_pstate/no_turbo",
    "/sys/devices/system/cpu/cpufreq/policy[0-9]*/boost",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/proc/sys/kernel/randomize_va_space",
    "/proc/cpuinfo",
    "/proc/meminfo",
)
#: ``sh -c SCRIPT sh SECONDS``: every file as ``path:line``, every disk's scheduler and
#: partition, then /proc/*/stat twice, *SECONDS* apart (``lines``: a shell function, so a
#: glob of every process is no program's argument list, and ``xargs`` splits it)
SCRIPT = f"""
lines() {{
  for f; do [ -e "$f" ] && printf '%s\\0' "$f"; done | xargs -0 -r grep -H '' 2>/dev/null
}}
echo "{MARK}pid $$"
echo "{MARK}ticks $(getconf CLK_TCK)"
lines {" ".join(FILES)} /sys/block/*/queue/scheduler
lines /sys/block/nvme*/dev /sys/block/nvme*/nvme*/dev /sys/class/nvme/nvme*/dev
for n in /dev/nvme*; do
  [ -e "$n" ] && echo "{MARK}node $(stat -c '%n %f %t %T' "$n")"
done
for p in /sys/block/*/*/partition; do
  [ -e "$p" ] || continue
  p=${{p%/partition}}; echo "{MARK}part ${{p##*/}} $(basename "${{p%/*}}")"
done
echo "{MARK}sample 1"
[ "$1" = 0 ] || lines /proc/[0-9]*/stat
sleep "$1"
echo "{MARK}sample 2"
lines /proc/[0-9]*/stat
exit 0
"""
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
_PATH = re.compile(r"^(/(?:sys|proc)/[^:]*):(.*)$")
_NAME = re.compile(r"[A-Za-z0-9._-]+")
_STAT = re.compile(r"/proc/[0-9]+/stat")


def _target(root: Path, path: str) -> Path:
    if "/../" in path or path.endswith("/.."):
        raise TuneError(f"the host printed an odd path: {path[:200]!r}")
    return root / path.lstrip("/")


@dataclass(frozen=True)
class Tree:
    """A copy of a host's files: *now*, the first process sample, and the marks printed."""

    root: Path
    now: Roots
    sample: Roots
    marks: dict[str, str]
    #: the host's NVMe device nodes: path -> (st_mode, st_rdev)
    nodes: dict[str, tuple[int, int]] = field(default_factory=dict)

    def node_of(self, path: Path) -> tuple[int, int] | None:
        """A host device node's type and number (:data:`~pytest_ssd.host.journal.NodeOf`)."""
        return self.nodes.get(str(path))

    def host_path(self, path: Path) -> Path:
        """The host's path of a file of the copy."""
        for top in (self.root / "sample", self.root):
            if path.is_relative_to(top):
                return Path("/") / path.relative_to(top)
        return path

    def copy_path(self, path: Path) -> Path:
        """The copy's file for a host path."""
        return _target(self.root, str(path))


def copy_tree(text: str, root: Path) -> Tree:
    """Write the script's output under *root*, as the host's ``/sys`` and ``/proc``.

    The first sample's ``/proc`` is under ``root/sample``; the second (and every other
    file) under ``root``.  ``sys/class/block/NAME`` links to ``sys/block/DISK`` (a
    partition: ``sys/block/DISK/NAME`` with its ``partition`` file), as on the host.
    """
    lines: dict[Path, list[str]] = {}
    base = root / "sample"
    found: dict[str, str] = {}
    parts: list[tuple[str, str]] = []
    nodes: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        if line.startswith(MARK):
            word, _, rest = line[len(MARK) :].partition(" ")
            found[word] = rest
            if word == "sample" and rest == "2":
                base = root
            elif word == "node" and len(fields := rest.split()) == 4:
                try:
                    major, minor = int(fields[2], 16), int(fields[3], 16)
                    nodes[fields[0]] = (int(fields[1], 16), os.makedev(major, minor))
                except ValueError:
                    pass  # not a node the host described: unknown, so refused
            elif word == "part":
                name, _, disk = rest.partition(" ")
                if _NAME.fullmatch(name) and _NAME.fullmatch(disk):
                    parts.append((name, disk))
            continue
        match = _PATH.match(line)
        if match is None:
            continue
        path = match.group(1)
        where = base if _STAT.fullmatch(path) else root
        lines.setdefault(_target(where, path), []).append(match.group(2))
    for file, content in lines.items():
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(content) + "\n")
    _block_links(root / "sys", parts)
    return Tree(
        root,
        Roots(sysfs=root / "sys", procfs=root / "proc", dev=Path("/dev")),
        Roots(sysfs=root / "sys", procfs=root / "sample" / "proc", dev=Path("/dev")),
        found,
        nodes,
    )


def _block_links(sysfs: Path, parts: list[tuple[str, str]]) -> None:
    block, links = sysfs / "block", sysfs / "class" / "block"
    links.mkdir(parents=True, exist_ok=True)
    for entry in sorted(block.iterdir()) if block.is_dir() else []:
        (links / entry.name).symlink_to(Path("../../block") / entry.name)
    for name, disk in parts:
        folder = block / disk / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "partition").write_text("1\n")
        (links / name).symlink_to(Path("../../block") / disk / name)


def read_tree(machine: Machine, root: Path, busy_sample_s: float = 0.0) -> Tree:
    """Copy the host's files the record and the tuning read, under *root*."""
    argv = ["sh", "-c", SCRIPT, "sh", f"{busy_sample_s:g}"]
    done = machine.run(argv, timeout=READ_TIMEOUT_S + busy_sample_s, name="host-settings")
    if done.returncode != 0:
        why = done.last_error_line()
        raise TuneError(f"{machine.where}: its settings could not be read: {why}")
    return copy_tree(done.stdout, root)


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
