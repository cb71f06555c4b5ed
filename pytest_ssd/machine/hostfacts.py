"""A test host's block-device facts (:class:`~.facts.Facts`), read in one snapshot over SSH.

A command over the host's master connection costs about 0.1 s, so the guard
does not ask the host file by file: :func:`snapshots` runs one POSIX
``sh`` script there (coreutils, findutils, ``grep`` and ``wipefs``; no Python on
the host) that prints every sysfs record of ``/sys/class/block``, ``stat`` of the
target, of every block node and symlink under ``/dev``, of every loop device's
backing file, swap area and mount source (a file mounted directly), mountinfo,
``/proc/swaps``, ``stat`` of every open file descriptor in ``/proc`` and the
target's ``wipefs`` probes.  The guard then judges those records as it judges
this machine's (:class:`~.facts.HereFacts`).

A fact that cannot be read refuses, never passes: a program the script needs
that is missing ends it naming the program (:func:`~pytest_ssd.machine.ssh.need`);
every list of paths is made by ``find`` and read by ``stat`` through ``xargs``
once ``find`` has ended (no argument-list limit, however many descriptors are
open); every error but a path that vanished
while it was read (and a descriptor the kernel hides even from root, skipped as
here) ends the script; a snapshot must end with its end mark and list the
script's own descriptors.

Two probes differ from this machine's:

* the exclusive open is ``wipefs --all --no-act`` (it opens the device
  ``O_RDWR | O_EXCL`` and writes nothing); it runs only for a write check, so a
  read-only session never opens a host's device for writing;
* mapped files (``/proc/PID/maps``) are not scanned: a program holding a file
  target only mapped is not seen (block devices, the targets of a lab, are found
  through their descriptors as here).

A path the snapshot did not cover (a mount source outside ``/dev``) reads as
unreachable, as a mount source that is not a device does here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.facts import Block, Facts, Node, devname, parse_dev, signatures_of
from pytest_ssd.machine.ssh import MARK, need

if TYPE_CHECKING:  # the machine takes its facts through this module
    from pytest_ssd.machine.machine import Machine

SNAPSHOT_TIMEOUT_S = 120.0
#: the exit code of a snapshot script that could not read a fact (its last line says which)
FAILED = 91
_STAT = "stat -L --printf '%f %t %T %d %i %n\\n'"
#: errors of a path that vanished while it was read (a process ended, a node went away)
_GONE = ": No such file or directory$|: No such process$"
#: a process whose descriptors the kernel hides even from root (skipped, as here); a user
#: other than root is denied other users' processes: that refuses
_DENIED = ": Permission denied$"

#: what every script reading facts starts with: the programs it needs, and
#: ``checked ALLOWED CMD...``, which passes CMD's output on and ends the script
#: (exit FAILED, the error as its last line) on any error but those matching ALLOWED,
#: or on an exit status beyond a command's "some files vanished"; ``listed FIND...``
#: stats what ``find`` lists once it has ended (two programs writing errors at once
#: cut each other's lines), through ``xargs``: no argument-list limit
PRELUDE = f"""
export LC_ALL=C
{need("cat", "head", "id", "readlink", "stat", "tr", "find", "xargs", "grep", "wipefs")}
fail() {{ printf '%s\\n' "$*" >&2; exit {FAILED}; }}
checked() {{
  allowed=$1; shift
  {{ err=$( {{ "$@"; echo "@rc $?" >&2; }} 2>&1 >&3 3>&- ); }} 3>&1
  rc=${{err##*@rc }}
  bad=$(printf '%s\\n' "$err" | grep -Ev "^@rc |$allowed" | head -n 1)
  [ -z "$bad" ] || fail "$bad"
  case $rc in 0|1|123) ;; *) fail "$1 exited with status $rc" ;; esac
}}
stats() {{ xargs -0 -r {_STAT} --; }}
listed() {{
  list=$("$@"); found=$?
  [ -z "$list" ] || printf '%s\\n' "$list" | tr '\\n' '\\0' | stats
  r=$?; [ "$found" -le 1 ] || return "$found"; return "$r"
}}
fds() {{
  listed find /proc -ignore_readdir_race -mindepth 1 -maxdepth 3 \\
    \\( -path '/proc/[0-9]*/fd/*' -print \\) -o -path '/proc/[0-9]*/fd' \\
    -o \\( -path '/proc/[0-9]*' ! -path '/proc/[0-9]*/*' \\) -o -prune
}}
show() {{
  [ -e "$1" ] || return 0
  {{ while IFS= read -r l || [ -n "$l" ]; do printf '%s:%s\\n' "$1" "$l"; done < "$1"; }} \\
    2>/dev/null || [ ! -e "$1" ] || fail "cannot read $1"
}}
"""

#: the probes of block device $t ($write = 1: the exclusive open as well)
PROBE = f"""
if [ -b "$t" ] || [ -f "$t" ]; then
  out=$(wipefs --no-act --json -- "$t" 2>&1); echo "{MARK}wipefs $?"; printf '%s\\n' "$out"
  if [ -b "$t" ] && [ "$write" = 1 ]; then
    out=$(wipefs --all --no-act -- "$t" 2>&1 >/dev/null); echo "{MARK}exclusive $?"
    printf '%s\\n' "$out"
  fi
fi
"""

#: every open file descriptor on the host (``find | xargs``: no argument-list limit)
FDS = f"""
hidden='^$'; [ "$(id -u)" = 0 ] && hidden='{_DENIED}'
echo "{MARK}fds $$"; checked "{_GONE}|$hidden" fds
"""

#: the end of every script's output: a snapshot without it was cut short
END = f'echo "{MARK}end"'

#: ``sh -c SNAPSHOT sh WRITE TARGET...``: the host's facts once, then each target's own
#: (its real path and probes, after a ``target`` mark)
SNAPSHOT = f"""{PRELUDE}
write=$1; shift
for t; do readlink -m -- "$t" >/dev/null || fail "readlink cannot resolve $t"; done
files() {{
  for t; do printf '%s\\n' "$t"; readlink -m -- "$t"; done
  for f in /sys/class/block/*/loop/backing_file; do
    [ -e "$f" ] && IFS= read -r b < "$f" && printf '%s\\n' "${{b% (deleted)}}"
  done
  while read -r name rest; do [ "$name" = Filename ] || printf '%s\\n' "$name"; done < /proc/swaps
  while read -r src rest; do case $src in /*) printf '%s\\n' "$src";; esac; done < /proc/mounts
}}
nodes() {{
  listed files "$@"; listed find /dev -ignore_readdir_race \\( -type b -o -type l \\) -print
}}
echo "{MARK}stat"; checked "{_GONE}" nodes "$@"
[ -d /sys/class/block ] || fail "/sys/class/block is missing: is sysfs mounted?"
echo "{MARK}sys"
for d in /sys/class/block/*; do show "$d/dev"; show "$d/uevent"; show "$d/loop/backing_file"; done
echo "{MARK}partition"
for p in /sys/class/block/*/*/partition; do [ -e "$p" ] && echo "$p"; done
echo "{MARK}link"
for p in /sys/class/block/*/holders/* /sys/class/block/*/slaves/*; do [ -e "$p" ] && echo "$p"; done
echo "{MARK}mountinfo"; cat /proc/self/mountinfo || fail "cannot read /proc/self/mountinfo"
echo "{MARK}swaps"; cat /proc/swaps || fail "cannot read /proc/swaps"
{FDS}
for t; do
  real=$(readlink -m -- "$t")
  echo "{MARK}target"
  echo "{MARK}real"; printf '%s\\n' "$real"
  {PROBE}
done
{END}
"""

#: ``sh -c ONE_PROBE sh TARGET WRITE``: the probes of a device below the target
ONE_PROBE = f"{PRELUDE}\nt=$1 write=$2\n{PROBE}\n{END}\n"

#: ``sh -c RESCAN``: the open file descriptors again
RESCAN = f"{PRELUDE}\n{FDS}\n{END}\n"

#: ``sh -c COMMANDS sh PID...``: each process's command line
COMMANDS = f"""
for p; do echo "{MARK}pid $p"; tr '\\0' ' ' < "/proc/$p/cmdline" 2>/dev/null; echo; done
{END}
"""


def sections(text: str) -> dict[str, list[str]]:
    """The script's output by section: ``{"stat": [...], "wipefs 0": [...], ...}``."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith(MARK):
            current = found.setdefault(line[len(MARK) :], [])
        else:
            current.append(line)
    return found


def _targets(text: str) -> list[dict[str, list[str]]]:
    """The sections of the host's facts, then of each target's (after each ``target`` mark)."""
    chunks = text.split(f"\n{MARK}target\n")
    return [sections(chunk) for chunk in chunks]


def _section(parts: Mapping[str, list[str]], word: str) -> tuple[str, list[str]] | None:
    """The section whose heading starts with *word*: (the rest of the heading, its lines)."""
    for heading, lines in parts.items():
        name, _, rest = heading.partition(" ")
        if name == word:
            return rest, lines
    return None


def parse_stats(lines: Iterable[str]) -> dict[str, Node]:
    """``stat --printf '%f %t %T %d %i %n'`` lines by path."""
    found = {}
    for line in lines:
        fields = line.split(" ", 5)
        if len(fields) < 6:
            continue
        try:
            mode, major, minor = int(fields[0], 16), int(fields[1], 16), int(fields[2], 16)
            node = Node.of_mode(mode, os.makedev(major, minor), int(fields[3]), int(fields[4]))
        except ValueError:
            continue
        found[fields[5]] = node
    return found


def parse_blocks(parts: Mapping[str, list[str]]) -> dict[str, Block]:
    """The :class:`Block` records of the ``sys``, ``partition`` and ``link`` sections."""
    files: dict[tuple[str, str], list[str]] = {}
    for line in parts.get("sys", []):
        path, _, value = line.partition(":")
        name, _, leaf = path.removeprefix("/sys/class/block/").partition("/")
        files.setdefault((name, leaf), []).append(value)
    disks = {}
    for line in parts.get("partition", []):
        disk, part = line.removeprefix("/sys/class/block/").split("/")[:2]
        disks[part] = disk
    links: dict[tuple[str, str], list[str]] = {}
    for line in parts.get("link", []):
        name, kind, other = line.removeprefix("/sys/class/block/").split("/")[:3]
        links.setdefault((name, kind), []).append(other)
    blocks = {}
    for (name, leaf), lines in sorted(files.items()):
        dev = parse_dev(lines[0]) if leaf == "dev" and lines else None
        if dev is None:
            continue
        backing = files.get((name, "loop/backing_file"))
        blocks[name] = Block(
            name=name,
            dev=dev,
            disk=disks.get(name),
            holders=tuple(sorted(links.get((name, "holders"), []))),
            slaves=tuple(sorted(links.get((name, "slaves"), []))),
            backing_file="\n".join(backing) if backing is not None else None,
            devname=devname("\n".join(files.get((name, "uevent"), []))),
        )
    return blocks


def parse_fds(lines: Iterable[str]) -> dict[int, list[Node]]:
    """What each process holds open, from ``stat`` of ``/proc/PID/fd/N``."""
    found: dict[int, list[Node]] = {}
    for path, node in parse_stats(lines).items():
        pid = path.removeprefix("/proc/").partition("/")[0]
        if pid.isdigit():
            found.setdefault(int(pid), []).append(node)
    return found


def snapshots(
    machine: Machine, targets: Mapping[str, Iterable[int]], *, write: bool
) -> dict[str, HostFacts]:
    """The facts of *machine* about each of *targets* as of now, all in one command there.

    *targets*: each target's pids that are pytest-ssd's own (:attr:`HostFacts.ours`).  The
    host's facts are read once for all; each target's real path and probes are its own.
    """
    names = list(targets)
    look = HostFacts(machine, "", write)._run(SNAPSHOT, "1" if write else "0", *names)
    head, *own = _targets(look)
    if len(own) != len(names):
        raise DeviceError(f"{machine.where}: the guard's facts were cut short there; refusing")
    stats, blocks = parse_stats(head.get("stat", [])), parse_blocks(head)
    found = {}
    for target, parts in zip(names, own, strict=True):
        facts = HostFacts(machine, target, write, frozenset(targets[target]))
        facts._parts = {**head, **parts}
        facts._stats, facts._blocks = stats, blocks
        facts._probes[target] = parts
        found[target] = facts
    return found


@dataclass
class HostFacts(Facts):
    """A test host's facts from one snapshot (:func:`snapshots`)."""

    machine: Machine
    target: str
    write: bool
    #: pids on the host that are pytest-ssd's own (the session's lock holder)
    ours: frozenset[int] = frozenset()
    _parts: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _stats: dict[str, Node] = field(default_factory=dict, repr=False)
    _blocks: dict[str, Block] = field(default_factory=dict, repr=False)
    _probes: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)

    @property
    def where(self) -> str:
        return self.machine.where

    def _run(self, script: str, *args: str) -> str:
        """The output of *script* run there, whole (it ends with its end mark)."""
        done = self.machine.run(
            ["sh", "-c", script, "sh", *args], timeout=SNAPSHOT_TIMEOUT_S, name="facts"
        )
        if done.returncode != 0:
            raise DeviceError(
                f"{self.where}: the guard cannot read the device facts there"
                f" ({done.last_error_line()}); refusing"
            )
        if f"{MARK}end" not in done.stdout.splitlines():
            raise DeviceError(f"{self.where}: the guard's facts were cut short there; refusing")
        return done.stdout

    def _sh(self, script: str, *args: str) -> dict[str, list[str]]:
        return sections(self._run(script, *args))

    def stat(self, path: str) -> Node | None:
        return self._stats.get(path)

    def realpath(self, path: str) -> str:
        real = self._parts.get("real", [])
        return real[0] if path == self.target and real else path

    def blocks(self) -> Mapping[str, Block]:
        return self._blocks

    def mountinfo(self) -> list[str]:
        return self._parts.get("mountinfo", [])

    def swaps(self) -> list[str]:
        return self._parts.get("swaps", [])

    def _holding(
        self, parts: Mapping[str, list[str]], devices: set[int], files: set[tuple[int, int]]
    ) -> set[int]:
        """Pids (not ours, not the script's) holding one of *devices* or *files* open."""
        script, lines = _section(parts, "fds") or ("", [])
        held = parse_fds(lines)
        if not script.isdigit() or int(script) not in held:
            raise DeviceError(
                f"{self.where}: the guard cannot read the open files in /proc/*/fd there"
                " (not even its own script's); refusing"
            )
        skip = self.ours | {int(script)}

        def holds(node: Node) -> bool:
            if node.kind == "block":
                return node.rdev in devices
            return (node.dev, node.ino) in files

        return {
            pid for pid, nodes in held.items() if pid not in skip and any(holds(n) for n in nodes)
        }

    def holding(self, devices: set[int], files: set[tuple[int, int]], again: bool) -> set[int]:
        return self._holding(self._sh(RESCAN) if again else self._parts, devices, files)

    def commands(self, pids: Iterable[int]) -> dict[int, str]:
        wanted = [str(pid) for pid in pids]
        found = self._sh(COMMANDS, *wanted) if wanted else {}
        return {int(pid): " ".join(found.get(f"pid {pid}", [])) for pid in wanted}

    def _probe(self, path: str) -> dict[str, list[str]]:
        if path not in self._probes:
            self._probes[path] = self._sh(ONE_PROBE, path, "1" if self.write else "0")
        return self._probes[path]

    def exclusive_open(self, path: str) -> tuple[bool, str | None]:
        found = _section(self._probe(path), "exclusive")
        if found is None or found[0] == "0":
            return False, None
        said = next((line for line in reversed(found[1]) if line.strip()), "")
        if "Device or resource busy" in said:
            return True, None
        return False, f"an exclusive open failed: {said.removeprefix('wipefs: error: ')}"

    def signatures(self, path: str) -> tuple[tuple[str, ...], str | None]:
        found = _section(self._probe(path), "wipefs")
        if found is None:
            return (), "wipefs did not run"
        rc, lines = found
        said = next((line for line in reversed(lines) if line.strip()), "")
        return signatures_of(int(rc) if rc.isdigit() else 1, "\n".join(lines), said)
