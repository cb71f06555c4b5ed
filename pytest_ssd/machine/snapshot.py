"""What readers read of a machine, declared as data, and the copy of a test host made from it.

A reader of ``/sys`` and ``/proc`` (the device's identity, its links, the host's settings
and facts) declares the files it reads as :class:`Reads`: globs of absolute paths, or
paths relative to the block device's sysfs folder, its disk's, its ``device`` and every
folder above that device (and above each NVMe controller of a multipath subsystem).
:func:`script` turns declarations into one ``sh`` command that prints every such file
of a host as ``grep -H`` lines (and the links between the folders as marks);
:func:`parse` writes them into a small copy of the host's ``/sys`` and ``/proc`` (same
paths, same links), and the reader reads the copy exactly as it reads this machine.
No list of files is kept anywhere else: a file a reader does not declare is not in the
copy (``tests/unit/test_declared_reads.py`` runs every reader against a tree that refuses
undeclared reads).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_ssd.errors import SsdError
from pytest_ssd.machine.ssh import MARK, need

if TYPE_CHECKING:  # the machine reads its files through this module
    from pytest_ssd.machine.machine import Machine

READ_TIMEOUT_S = 60.0
#: a block device's kernel name (``nvme0n1``, ``loop3``, ``dm-0``): never ``.`` or ``..``
BLOCK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]*")
#: the copy's folder of host paths it cannot hold: never written (:meth:`Snapshot.read_path`)
OUTSIDE = "outside"


class SnapshotError(SsdError):
    """A host's files could not be copied (or it printed a path outside /sys and /proc)."""


@dataclass(frozen=True)
class Reads:
    """The files a reader reads, as globs (``*``, ``?`` and ``[...]`` within one folder)."""

    #: absolute paths of the machine (``/sys/devices/system/cpu/cpu[0-9]*/cpufreq/boost``)
    files: tuple[str, ...] = ()
    #: relative to the block device's sysfs folder (a partition's own)
    node: tuple[str, ...] = ()
    #: relative to its disk's folder (the partition's parent; the device's own otherwise)
    disk: tuple[str, ...] = ()
    #: relative to the folder the disk's ``device`` link leads to
    device: tuple[str, ...] = ()
    #: relative to that folder and every folder above it up to /sys, and likewise from each
    #: NVMe controller the device links to (native multipath)
    above: tuple[str, ...] = ()
    #: absolute paths read twice, some seconds apart (the first sample under ``sample/``)
    sampled: tuple[str, ...] = ()
    #: device nodes whose type and number are read (``stat``)
    nodes: tuple[str, ...] = ()

    def __or__(self, other: Reads) -> Reads:
        """Both readers' files (each once)."""
        return Reads(
            **{
                f.name: tuple(dict.fromkeys((*getattr(self, f.name), *getattr(other, f.name))))
                for f in fields(self)
            }
        )

    @property
    def per_device(self) -> bool:
        return bool(self.node or self.disk or self.device or self.above)


def _words(base: str, globs: tuple[str, ...]) -> str:
    """*globs* under the shell variable *base*, expanded by the shell (nothing else is)."""
    for glob in globs:
        if not re.fullmatch(r"[A-Za-z0-9_./*?\[\]:-]+", glob) or ".." in glob:
            raise ValueError(f"not a plain glob: {glob!r}")
    return " ".join(f'"${base}"/{g}' if base else g for g in globs)


def _device_part(reads: Reads) -> str:
    if not reads.per_device:
        return ""
    up = ""
    if reads.above:
        up = f"""
up() {{
  p=$1
  while [ "$p" != /sys ] && [ "$p" != / ] && [ -n "$p" ]; do
    lines {_words("p", reads.above)}
    p=${{p%/*}}
  done
}}"""
        up_each = f"""
    up "$dev"
    for c in "$dev"/nvme*; do
      case ${{c##*/}} in nvme*n*) continue ;; esac
      r=$(readlink -e "$c") || continue
      echo "{MARK}controller ${{c##*/}} $r"
      up "$r"
    done"""
    else:
        up_each = ""
    return f"""
if [ -n "$1" ]; then
  {need("readlink", "grep", "xargs")}{up}
  set -f
  for b in $1; do
    echo "{MARK}block $b"
    n=$(readlink -e "/sys/class/block/$b") || {{ echo "{MARK}missing $b"; continue; }}
    d=$n; [ -e "$n/partition" ] && d=${{n%/*}}
    echo "{MARK}node $n"
    echo "{MARK}disk $d"
    lines {_words("n", reads.node)} {_words("d", reads.disk)}
    if dev=$(readlink -e "$d/device"); then
      echo "{MARK}device $dev"
      lines {_words("dev", reads.device)}{up_each}
    fi
  done
  set +f
fi"""


def script(reads: Reads) -> str:
    """``sh -c SCRIPT sh NAMES SECONDS``: every file *reads* declares, as ``path:line``.

    *NAMES*: the block devices, blank-separated (``nvme0n1 sda``; empty: none), each after
    a ``block NAME`` mark (``missing NAME``: not in the host's /sys); *SECONDS*: between
    the two samples of :attr:`Reads.sampled`.  ``lines`` is a shell function, so a glob of
    every process is no program's argument list (``xargs`` splits it).
    """
    nodes = ""
    if reads.nodes:
        nodes = f"""
for x in {_words("", reads.nodes)}; do
  [ -e "$x" ] && echo "{MARK}stat $(stat -c '%n %f %t %T' "$x")"
done"""
    sampled = ""
    if reads.sampled:
        sampled = f"""
echo "{MARK}sample 1"
[ "$2" = 0 ] || lines {_words("", reads.sampled)}
sleep "$2"
echo "{MARK}sample 2"
lines {_words("", reads.sampled)}"""
    return f"""
lines() {{
  for f; do [ -e "$f" ] && printf '%s\\0' "$f"; done | xargs -0 -r grep -H '' 2>/dev/null
}}
echo "{MARK}pid $$"
echo "{MARK}ticks $(getconf CLK_TCK)"{_device_part(reads)}
lines {_words("", reads.files)}{nodes}{sampled}
exit 0
"""


def _regex(glob: str) -> str:
    """A shell glob as a regular expression (``*`` stays within one folder)."""
    out = []
    for token in re.findall(r"\[[^\]]*\]|\*|\?|[^*?\[]+", glob):
        if token == "*":
            out.append("[^/]*")
        elif token == "?":
            out.append("[^/]")
        elif token.startswith("["):
            out.append("[^" + token[2:] if token.startswith("[!") else token)
        else:
            out.append(re.escape(token))
    return "".join(out)


@dataclass(frozen=True)
class Places:
    """Where a block device's folders are in a machine's /sys (what the globs start from)."""

    node: str | None = None
    disk: str | None = None
    device: str | None = None
    controllers: tuple[str, ...] = ()

    def above(self) -> list[str]:
        """The device's folder and every folder above it (and its controllers')."""
        found: dict[str, None] = {}
        for start in (self.device, *self.controllers):
            path = Path(start) if start else None
            while path is not None and str(path) not in ("/sys", "/"):
                found[str(path)] = None
                path = path.parent
        return list(found)

    @classmethod
    def of(cls, sysfs: Path, name: str) -> Places:
        """The places of block device *name* in the tree at *sysfs* (shown from its root)."""
        node = (sysfs / "class" / "block" / name).resolve()
        disk = node.parent if (node / "partition").exists() else node
        link = disk / "device"
        device = link.resolve() if link.exists() else None
        controllers = (
            tuple(
                str(c.resolve())
                for c in sorted(device.iterdir())
                if re.fullmatch(r"nvme\d+", c.name)
            )
            if device is not None and device.is_dir()
            else ()
        )
        top = sysfs.resolve().parent

        def shown(p: Path | str | None) -> str | None:
            return None if p is None else "/" + str(Path(p).relative_to(top))

        return cls(
            shown(node),
            shown(disk),
            shown(device),
            tuple(s for c in controllers if (s := shown(c))),
        )


def declared(reads: Reads, places: Places = Places()) -> re.Pattern[str]:
    """Matches every path *reads* declares for a device at *places* (and no other)."""
    alternatives = [_regex(g) for g in (*reads.files, *reads.sampled)]
    for base, globs in (
        (places.node, reads.node),
        (places.disk, reads.disk),
        (places.device, reads.device),
    ):
        if base:
            alternatives += [re.escape(base) + "/" + _regex(g) for g in globs]
    ups = places.above()
    if ups and reads.above:
        stem = "(?:" + "|".join(re.escape(u) for u in ups) + ")/"
        alternatives += [stem + _regex(g) for g in reads.above]
    return re.compile("(?:" + "|".join(alternatives or ["(?!)"]) + ")")


@dataclass(frozen=True)
class Snapshot:
    """A copy of a host's declared files under *root*: ``sys``, ``proc`` (second sample),
    ``sample/proc`` (first sample), with the marks the script printed."""

    root: Path
    marks: dict[str, str]
    places: Places = Places()
    #: the host's device nodes: path -> (st_mode, st_rdev)
    nodes: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def sysfs(self) -> Path:
        return self.root / "sys"

    def node_of(self, path: Path) -> tuple[int, int] | None:
        """A host device node's type and number (:data:`~pytest_ssd.host.journal.NodeOf`)."""
        return self.nodes.get(str(path))

    def host_path(self, path: Path) -> Path:
        """The host's path of a file of the copy (or of a path it cannot hold)."""
        for top in (self.root / OUTSIDE, self.root / "sample", self.root):
            if path.is_relative_to(top):
                return Path("/") / path.relative_to(top)
        return path

    def copy_path(self, path: Path | str) -> Path:
        """The copy's file for a host path (:class:`SnapshotError` outside /sys and /proc)."""
        return _target(self.root, str(path))

    def read_path(self, path: Path | str) -> Path:
        """Where a reader of the copy finds a host path: its file in the copy, or, for a path
        the copy cannot hold (outside /sys and /proc), a path under :data:`OUTSIDE` that the
        copy never writes, so the reader finds nothing there (never a file outside the copy)."""
        try:
            return self.copy_path(path)
        except SnapshotError:
            parts = [p for p in str(path).split("/") if p not in ("", ".", "..")]
            return self.root.joinpath(OUTSIDE, *parts)

    def shown(self, text: str) -> str:
        """*text* with the paths of the copy (:meth:`read_path`) as the host's."""
        for top in (self.root / OUTSIDE, self.root / "sample", self.root):
            text = text.replace(f"{top}/", "/")
        return text


def _target(root: Path, path: str) -> Path:
    if not path.startswith(("/sys/", "/proc/")) or "/../" in path or path.endswith("/.."):
        raise SnapshotError(f"the host printed an odd path: {path[:200]!r}")
    return root / path.lstrip("/")


def _folder(root: Path, path: str) -> Path:
    folder = _target(root, path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _link(link: Path, to: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(link):
        link.symlink_to(to)


def _structure(root: Path, name: str, marked: list[tuple[str, str]]) -> Places:
    """The device's folders and links (``class/block/NAME``, ``device``, controllers)."""
    found = dict(marked)
    if "node" not in found or not name:
        return Places()
    node, disk = _folder(root, found["node"]), _folder(root, found.get("disk", found["node"]))
    _link(root / "sys" / "class" / "block" / name, node)
    controllers = []
    if "device" in found:
        device = _folder(root, found["device"])
        _link(disk / "device", device)
        for word, rest in marked:
            cname, _, path = rest.partition(" ")
            if word == "controller" and re.fullmatch(r"nvme\d+", cname):
                _link(device / cname, _folder(root, path))
                controllers.append(path)
    return Places(found["node"], found.get("disk"), found.get("device"), tuple(controllers))


def _block_links(sysfs: Path) -> None:
    """``class/block/NAME`` for every disk and partition copied under ``block`` (as on a host)."""
    block, links = sysfs / "block", sysfs / "class" / "block"
    for entry in sorted(block.iterdir()) if block.is_dir() else []:
        if entry.is_dir():
            _link(links / entry.name, Path("../../block") / entry.name)
            for part in sorted(entry.glob("*/partition")):
                name = part.parent.name
                _link(links / name, Path("../../block") / entry.name / name)


def _stat(rest: str) -> tuple[str, tuple[int, int]] | None:
    words = rest.split()
    if len(words) != 4:
        return None
    try:
        major, minor = int(words[2], 16), int(words[3], 16)
        return words[0], (int(words[1], 16), os.makedev(major, minor))
    except ValueError:
        return None  # not a node the host described: unknown, so refused


def _by_block(marked: list[tuple[str, str]]) -> dict[str | None, list[tuple[str, str]]]:
    """The marks of the host (under None) and of each ``block NAME`` that follows."""
    found: dict[str | None, list[tuple[str, str]]] = {None: []}
    current = found[None]
    for word, rest in marked:
        if word == "block":
            current = found.setdefault(rest, [])
        else:
            current.append((word, rest))
    return found


def parse_all(text: str, reads: Reads, root: Path, names: list[str]) -> dict[str, Snapshot]:
    """Write the output of :func:`script` under *root*, as the host's ``/sys`` and ``/proc``:
    one copy, with each block device of *names* the host has (a ``missing`` one is left out).

    A line is ``PATH:VALUE`` and paths hold colons (``pci0000:00``, ``2:0:0:0``): its path
    is the shortest prefix that is a declared file.
    """
    lines = text.splitlines()
    marked = [
        (word, rest)
        for line in lines
        if line.startswith(MARK)
        for word, _, rest in [line[len(MARK) :].partition(" ")]
    ]
    by_block = _by_block(marked)
    host = by_block[None]
    # one device without block marks: every mark is its own
    own = {n: by_block.get(n, host if len(names) == 1 else []) for n in names}
    places = {n: _structure(root, n, marks) for n, marks in own.items()}
    each = [declared(reads, where).pattern for where in places.values()] or [
        declared(reads).pattern
    ]
    pattern = re.compile(f"((?:{'|'.join(each)})):(.*)")
    contents: dict[Path, list[str]] = {}
    base = root / "sample"
    for line in lines:
        if line == f"{MARK}sample 2":
            base = root
        match = pattern.match(line)
        if match is None or line.startswith(MARK):
            continue
        sampled = any(re.fullmatch(_regex(g), match.group(1)) for g in reads.sampled)
        contents.setdefault(_target(base if sampled else root, match.group(1)), []).append(
            match.group(2)
        )
    for file, content in contents.items():
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(content) + "\n")
    _block_links(root / "sys")
    nodes = dict(found for word, rest in host if word == "stat" and (found := _stat(rest)))
    return {
        n: Snapshot(root, dict(host + marks), places[n], nodes)
        for n, marks in own.items()
        if ("missing", n) not in marks
    }


def parse(text: str, reads: Reads, root: Path, name: str = "") -> Snapshot:
    """:func:`parse_all` of one block device *name* (empty: none)."""
    return parse_all(text, reads, root, [name])[name]


def take_all(
    machine: Machine,
    reads: Reads,
    root: Path,
    *,
    devices: list[str],
    seconds: float = 0.0,
    what: str = "sysfs",
) -> dict[str, Snapshot]:
    """Copy what *reads* declares of *machine* and of each block device of *devices* under
    *root*, in one command; a device the host does not have is left out.

    *what* names the copy in a message ("its *what* could not be read") and in artifacts.
    """
    for device in devices:
        if not BLOCK_NAME.fullmatch(device):
            raise SnapshotError(f"{machine.where}: not a block device name: {device[:200]!r}")
    return parse_all(machine.declared(reads, devices, seconds, what), reads, root, devices or [""])


def printed(machine: Machine, reads: Reads, devices: list[str], seconds: float, what: str) -> str:
    """What :func:`script` prints on *machine* of *reads* and *devices*, in one command."""
    argv = ["sh", "-c", script(reads), "sh", " ".join(devices), f"{seconds:g}"]
    done = machine.run(argv, timeout=READ_TIMEOUT_S + seconds, name=what.replace(" ", "-"))
    if done.returncode != 0:
        why = done.last_error_line() or f"exit code {done.returncode}"
        raise SnapshotError(f"{machine.where}: its {what} could not be read: {why}")
    return done.stdout


def take(
    machine: Machine,
    reads: Reads,
    root: Path,
    *,
    device: str = "",
    seconds: float = 0.0,
    what: str = "sysfs",
) -> Snapshot:
    """Copy what *reads* declares of *machine* (and of its block *device*) under *root*."""
    found = take_all(
        machine, reads, root, devices=[device] if device else [], seconds=seconds, what=what
    )
    if device not in found:
        raise SnapshotError(f"{machine.where}: block device {device} is not in its /sys")
    return found[device]
