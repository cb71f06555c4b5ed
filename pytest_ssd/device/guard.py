"""The safety guard: every write, trim or purge of a target goes through here.

fio writes happily to whatever it is given: it exits 0 doing nothing on a
mounted device and creates a regular file for a mistyped path.  :func:`inspect`
gathers what the kernel knows about a target (reading only, never opening for
writing); :func:`refusal` turns those facts into the one-line reason writing is
refused.  Facts are matched by device number, not by name, so symlinks such as
``/dev/disk/by-id/...`` and mounts through ``/dev/root`` are caught as well.

The guard walks up (partitions, holders, loop devices the target backs) and down
(what the target is built on: device-mapper and md slaves, a loop device's
backing device): a loop device set up at an offset on a disk holding a mounted
filesystem writes into that filesystem, so every block device below the target
must pass the same checks.  Any process holding the target (or what it is built
on) open counts, found in ``/proc`` as ``fuser`` does (:mod:`.openers`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import shlex
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.node import describe_pid, kernel_node
from pytest_ssd.device.openers import openers
from pytest_ssd.errors import SafetyError
from pytest_ssd.proc.runner import run, which

SYS_BLOCK = Path("/sys/class/block")
MOUNTINFO = Path("/proc/self/mountinfo")
SWAPS = Path("/proc/swaps")
#: mount points of the running system: a device backing one is never written to
SYSTEM_MOUNTS = ("/", "/boot", "/boot/efi", "/usr", "/var")
PROBE_TIMEOUT_S = 60.0
_OCTAL = re.compile(r"\\([0-7]{3})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class TargetFacts:
    """What the guard found about a target; also recorded in results for the report."""

    path: str
    exists: bool
    kind: str | None  # "block", "file", or None (missing or another type)
    mounts: tuple[str, ...] = ()
    swap: bool = False
    signatures: tuple[str, ...] = ()
    holders: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    busy: bool = False
    system: tuple[str, ...] = ()
    backs_loop: tuple[str, ...] = ()
    #: why the target could not be probed (open or wipefs failed), else None
    probe_error: str | None = None
    #: processes holding it (or a partition or holder of it) open: 'pid 12 (cmd)'
    openers: tuple[str, ...] = ()
    #: the block devices it is built on (dm/md slaves, a loop's backing device), checked alike
    built_on: tuple[TargetFacts, ...] = ()


def inspect(path: str | Path, above: frozenset[str] = frozenset()) -> TargetFacts:
    """Gather the facts about *path*; reads only, never writes or opens for writing.

    *above* names the devices built on *path* that the walk came down from: they
    are the target's own chain, not users of *path*.

    Raises :class:`~pytest_ssd.errors.ToolError` only when ``wipefs`` is missing;
    every other failure to probe is recorded in ``probe_error`` (and refused).
    """
    text = str(path)
    st = _stat(text)
    if st is None:
        return TargetFacts(text, exists=False, kind=None)
    if stat.S_ISBLK(st.st_mode):
        tree = _block_tree(st.st_rdev)
        claimed = any(h in above for h in tree.holders)  # a dm/md above holds it exclusively
        busy, open_error = (False, None) if claimed else _exclusive_open(text)
        facts = _inspect_related(text, "block", tree, busy, open_error, above=above)
        by = _openers(tree.devs, ())
        lower = tuple(_built_on(st.st_rdev, above))
        return dataclasses.replace(facts, openers=by, built_on=lower)
    if stat.S_ISREG(st.st_mode):
        facts = _inspect_related(text, "file", _Tree(set(), [], [], []), False, None, above=above)
        return dataclasses.replace(facts, openers=_openers((), ((st.st_dev, st.st_ino),)))
    return TargetFacts(text, exists=True, kind=None)


def _openers(devices: Iterable[int], files: Iterable[tuple[int, int]]) -> tuple[str, ...]:
    return tuple(describe_pid(pid) for pid in openers(devices, files))


def _built_on(rdev: int, above: frozenset[str]) -> Iterable[TargetFacts]:
    """Facts of every block device directly below *rdev* (each walks further down itself)."""
    sysdir = _sysfs_dir(rdev)
    if sysdir is None:
        return
    chain = above | {sysdir.name}
    slaves = sysdir / "slaves"
    lower = [_dev_of(s.resolve()) for s in sorted(slaves.iterdir())] if slaves.is_dir() else []
    backing = sysdir / "loop" / "backing_file"
    if backing.is_file():
        with contextlib.suppress(OSError):
            lower.append(_block_rdev(backing.read_text().strip().removesuffix(" (deleted)")))
    for dev in lower:
        if dev is None:
            continue  # a loop on a regular file: its file system is not the target's data
        node = kernel_node(dev)
        yield inspect(node or f"/dev/block/{os.major(dev)}:{os.minor(dev)}", frozenset(chain))


@dataclass
class _Tree:
    """Device numbers a target's data reaches, and the names found on the way."""

    devs: set[int]
    partitions: list[str]
    holders: list[str]
    loops: list[str]


def _inspect_related(
    path: str,
    kind: str,
    tree: _Tree,
    busy: bool,
    open_error: str | None,
    *,
    above: frozenset[str] = frozenset(),
) -> TargetFacts:
    _add_loops(path, tree)
    tree.holders = [h for h in tree.holders if h not in above]
    tree.loops = [loop for loop in tree.loops if loop not in above]
    mounts = _mounts(tree.devs)
    signatures, probe_error = _signatures(path)
    return TargetFacts(
        path=path,
        exists=True,
        kind=kind,
        mounts=tuple(mounts),
        swap=_in_swap(path, tree.devs),
        signatures=signatures,
        holders=tuple(tree.holders),
        partitions=tuple(tree.partitions),
        busy=busy,
        system=tuple(m for m in SYSTEM_MOUNTS if m in mounts),
        backs_loop=tuple(tree.loops),
        probe_error=open_error or probe_error,
    )


def _extend(tree: _Tree, more: _Tree) -> None:
    tree.devs |= more.devs
    tree.partitions += [p for p in more.partitions if p not in tree.partitions]
    tree.holders += [h for h in more.holders if h not in tree.holders]


def _sysfs_dir(rdev: int) -> Path | None:
    sysdir = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
    return sysdir.resolve() if sysdir.exists() else None


def _dev_of(sysdir: Path) -> int | None:
    try:
        major, minor = (sysdir / "dev").read_text().strip().split(":")
    except (OSError, ValueError):
        return None
    return os.makedev(int(major), int(minor))


def _block_tree(rdev: int) -> _Tree:
    """The device, its partitions and (transitively) every holder of them."""
    tree = _Tree({rdev}, [], [], [])
    sysdir = _sysfs_dir(rdev)
    if sysdir is None:
        return tree
    todo = [sysdir]
    for part in sorted(sysdir.iterdir()):
        if (part / "partition").is_file():
            tree.partitions.append(part.name)
            todo.append(part)
    while todo:
        holders = todo.pop() / "holders"
        for holder in sorted(holders.iterdir()) if holders.is_dir() else []:
            dev = _dev_of(SYS_BLOCK / holder.name)
            if holder.name not in tree.holders and dev is not None:
                tree.holders.append(holder.name)
                tree.devs.add(dev)
                todo.append((SYS_BLOCK / holder.name).resolve())
    return tree


def _stat(path: str) -> os.stat_result | None:
    """``stat`` following symlinks, or None when the path cannot be reached."""
    try:
        return Path(path).stat()
    except OSError:
        return None


def _same_target(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    if a is None or b is None:
        return False
    if stat.S_ISBLK(a.st_mode) and stat.S_ISBLK(b.st_mode):
        return a.st_rdev == b.st_rdev
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _add_loops(path: str, tree: _Tree) -> None:
    """Add every loop device backed by *path* or by a device of *tree*, and what they reach."""
    target = _stat(path)
    found = True
    while found:  # until no new loop: a loop device may back another one
        found = False
        for backing in sorted(SYS_BLOCK.glob("loop*/loop/backing_file")):
            name = backing.parent.parent.name
            try:
                file = backing.read_text().rstrip("\n")
            except OSError:  # the loop device was detached meanwhile
                continue
            dev = _dev_of(backing.parent.parent)
            reached = _same_target(target, _stat(file)) or _block_rdev(file) in tree.devs
            if reached and dev is not None and name not in tree.loops:
                tree.loops.append(name)
                _extend(tree, _block_tree(dev))
                found = True


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def _mounts(devs: set[int]) -> list[str]:
    """Mount points backed by one of *devs*, by device number or by mount source."""
    found: list[str] = []
    for line in MOUNTINFO.read_text().splitlines():
        fields = line.split(" ")
        major, minor = fields[2].split(":")
        source = _unescape(fields[fields.index("-") + 2])
        point = _unescape(fields[4])
        if os.makedev(int(major), int(minor)) in devs or _block_rdev(source) in devs:
            found.append(point)
    return list(dict.fromkeys(found))


def _block_rdev(path: str) -> int | None:
    st = _stat(path) if path.startswith("/") else None
    return st.st_rdev if st is not None and stat.S_ISBLK(st.st_mode) else None


def _in_swap(path: str, devs: set[int]) -> bool:
    target = _stat(path)
    for line in SWAPS.read_text().splitlines()[1:]:
        name = _unescape(line.split()[0])
        if _same_target(target, _stat(name)) or _block_rdev(name) in devs:
            return True
    return False


def _exclusive_open(path: str) -> tuple[bool, str | None]:
    """(busy, error): an exclusive read-only open of a block device, closed at once.

    EBUSY means mounted, held by a holder or opened with O_EXCL by another program;
    any other failure (EPERM from a device cgroup, ...) leaves the state unknown.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            return True, None
        return False, f"an exclusive open failed: {exc.strerror}"
    os.close(fd)
    return False, None


def _signatures(path: str) -> tuple[tuple[str, ...], str | None]:
    """Filesystem, partition-table, RAID, LVM and swap signatures wipefs finds (never wipes)."""
    wipefs = which("wipefs", "install util-linux")
    done = run([wipefs, "--no-act", "--json", path], timeout=PROBE_TIMEOUT_S)
    if done.returncode != 0:
        return (), f"wipefs failed: {done.last_error_line()}"
    if not done.stdout.strip():  # some wipefs versions print nothing when nothing is found
        return (), None
    try:
        found = json.loads(done.stdout).get("signatures", [])
        return tuple(dict.fromkeys(str(sig["type"]) for sig in found)), None
    except (ValueError, AttributeError, KeyError, TypeError):
        return (), "wipefs printed JSON this guard does not understand"


def _one_line(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _system_reason(system: tuple[str, ...]) -> str:
    what = "root filesystem" if "/" in system else "filesystem"
    return (
        f"it holds the running system's {what} ({', '.join(system)}); "
        "this is never allowed, choose another target"
    )


def _reasons(f: TargetFacts) -> Iterable[str | None]:
    """Every check in order; the first reason that is not None wins."""
    quoted = shlex.quote(f.path)
    yield (
        None
        if f.exists
        else "it does not exist (fio would create a regular file there); check the path"
    )
    yield None if f.kind else "it is not a block device or a regular file; check the path"
    yield _system_reason(f.system) if f.system else None
    if f.mounts:
        yield f"it is mounted at {', '.join(f.mounts)}; unmount it first or use --ssd-readonly"
    if f.swap:
        yield f"it is an active swap area; run 'swapoff {quoted}' first or use --ssd-readonly"
    if f.holders:
        yield f"it is in use by {', '.join(f.holders)}; release it first or use --ssd-readonly"
    if f.backs_loop:
        loops = ", ".join(f"/dev/{loop}" for loop in f.backs_loop)
        yield f"it backs the loop device {loops}; detach it first or use --ssd-readonly"
    if f.busy:
        yield (
            "it is in use (an exclusive open failed: held open by another program); "
            "close that program first or use --ssd-readonly"
        )
    if f.openers:
        yield (
            f"it is open in {', '.join(f.openers)}; close that program first or use --ssd-readonly"
        )
    if f.probe_error:
        yield f"it could not be probed ({f.probe_error}); check the target and your permissions"
    if f.signatures:
        what = f"a {f.signatures[0]} signature"
        if len(f.signatures) > 1:
            what = f"{', '.join(f.signatures)} signatures"
        yield (
            f"it holds {what}; wipe it with 'wipefs -a {quoted}' "
            "if its data may be destroyed, or use --ssd-readonly"
        )


def _reason(facts: TargetFacts) -> str | None:
    """The first reason of *facts*, then of what it is built on ('it is built on X, which ...')."""
    reason = next((r for r in _reasons(facts) if r is not None), None)
    if reason is not None:
        return reason
    for lower in facts.built_on:
        below = _reason(lower)
        if below is not None:
            return f"it is built on {lower.path}, which {below.removeprefix('it ')}"
    return None


def refusal(facts: TargetFacts) -> str | None:
    """The one-line reason writing to the target is refused, or None when it is safe."""
    reason = _reason(facts)
    return None if reason is None else _one_line(f"refusing to write to {facts.path}: {reason}")


def check_writable(path: str | Path) -> TargetFacts:
    """Inspect *path* and raise :class:`SafetyError` unless writing to it is safe."""
    facts = inspect(path)
    reason = refusal(facts)
    if reason is not None:
        raise SafetyError(reason)
    return facts


def check_readable(path: str | Path) -> TargetFacts:
    """Inspect *path* and raise :class:`SafetyError` unless it is a block device or a file."""
    facts = inspect(path)
    if not facts.exists:
        raise SafetyError(_one_line(f"cannot read {facts.path}: it does not exist; check the path"))
    if facts.kind is None:
        raise SafetyError(
            _one_line(
                f"cannot read {facts.path}: it is not a block device or a regular file; "
                "check the path"
            )
        )
    return facts


def check_confirmation(path: str, description: str, token: str, confirmed: Sequence[str]) -> None:
    """Raise :class:`SafetyError` unless *token* (serial or path) was given to ``--ssd-confirm``."""
    if token in confirmed:
        return
    add = shlex.quote(f"--ssd-confirm={token}")
    if not confirmed:
        why = "it holds no confirmation"
    else:
        given = ", ".join(shlex.quote(c) for c in confirmed)
        why = f"--ssd-confirm was given {given}, but this target needs {token!r}"
    raise SafetyError(
        _one_line(
            f"refusing to write to {path} ({description}): {why}; "
            f"add {add} if its data may be destroyed"
        )
    )
