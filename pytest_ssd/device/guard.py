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

import dataclasses
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.openers import shown
from pytest_ssd.device.view import Node, View
from pytest_ssd.errors import SafetyError

#: mount points of the running system: a device backing one is never written to
SYSTEM_MOUNTS = ("/", "/boot", "/boot/efi", "/usr", "/var")
_OCTAL = re.compile(r"\\([0-7]{3})")


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


def inspect(path: str | Path, view: View, above: frozenset[str] = frozenset()) -> TargetFacts:
    """Gather the facts about *path* on *view*'s machine.

    Reads only, never writes or opens for writing.  *above* names the devices built
    on *path* that the walk came down from: they are the target's own chain, not
    users of *path*.

    Raises :class:`~pytest_ssd.errors.ToolError` only when ``wipefs`` is missing;
    every other failure to probe is recorded in ``probe_error`` (and refused).
    """
    text = str(path)
    node = view.stat(text)
    if node is None:
        return TargetFacts(text, exists=False, kind=None)
    if node.kind == "block":
        tree = _block_tree(view, node.rdev)
        # a dm/md above holds it exclusively, or this session does (no one else can)
        claimed = any(h in above for h in tree.holders) or node.rdev in view.claimed
        busy, open_error = (False, None) if claimed else view.exclusive_open(text)
        facts = _inspect_related(
            view, text, node, tree, busy=busy, open_error=open_error, above=above
        )
        by = view.openers(tree.devs, ())
        lower = tuple(_built_on(view, node.rdev, above))
        return dataclasses.replace(facts, openers=by, built_on=lower)
    if node.kind == "file":
        facts = _inspect_related(view, text, node, _Tree(set(), [], [], []), above=above)
        return dataclasses.replace(facts, openers=view.openers((), ((node.dev, node.ino),)))
    return TargetFacts(text, exists=True, kind=None)


def _built_on(view: View, rdev: int, above: frozenset[str]) -> Iterable[TargetFacts]:
    """Facts of every block device directly below *rdev* (each walks further down itself)."""
    block = view.block_of(rdev)
    if block is None:
        return
    chain = above | {block.name}
    blocks = view.blocks()
    lower = [blocks[s].dev if s in blocks else None for s in block.slaves]
    if block.backing_file is not None:
        file = block.backing_file.strip().removesuffix(" (deleted)")
        lower.append(_block_rdev(view, file))
        if lower[-1] is None:
            yield from _backing_file(view, file, frozenset(chain))
    for dev in lower:
        if dev is None:
            continue
        node = view.kernel_node(dev)
        path = node or f"/dev/block/{os.major(dev)}:{os.minor(dev)}"
        yield inspect(path, view, frozenset(chain))


def _backing_file(view: View, path: str, above: frozenset[str]) -> Iterable[TargetFacts]:
    """The facts of a loop device's regular backing file: its other users refuse the target.

    Another loop device on the same file (whatever its range), a process holding it
    open, swap on it, a mount of it: each may write where the target writes.  The
    file's bytes outside the loop device's range are not the target's data, so its
    signatures are not probed (a disk image's other partitions are not refused).
    """
    node = view.stat(path)
    if node is None or node.kind != "file":
        return
    facts = _inspect_related(view, path, node, _Tree(set(), [], [], []), above=above, probe=False)
    yield dataclasses.replace(facts, openers=view.openers((), ((node.dev, node.ino),)))


@dataclass
class _Tree:
    """Device numbers a target's data reaches, and the names found on the way."""

    devs: set[int]
    partitions: list[str]
    holders: list[str]
    loops: list[str]


def _inspect_related(
    view: View,
    path: str,
    node: Node,
    tree: _Tree,
    *,
    busy: bool = False,
    open_error: str | None = None,
    above: frozenset[str] = frozenset(),
    probe: bool = True,
) -> TargetFacts:
    _add_loops(view, node, tree)
    tree.holders = [h for h in tree.holders if h not in above]
    tree.loops = [loop for loop in tree.loops if loop not in above]
    mounts = _mounts(view, tree.devs, node)
    signatures, probe_error = view.signatures(path) if probe else ((), None)
    return TargetFacts(
        path=path,
        exists=True,
        kind=node.kind,
        mounts=tuple(mounts),
        swap=_in_swap(view, node, tree.devs),
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


def _block_tree(view: View, rdev: int) -> _Tree:
    """The device, its partitions and (transitively) every holder of them."""
    tree = _Tree({rdev}, [], [], [])
    block = view.block_of(rdev)
    if block is None:
        return tree
    blocks = view.blocks()
    tree.partitions = sorted(b.name for b in blocks.values() if b.disk == block.name)
    tree.devs |= {blocks[p].dev for p in tree.partitions}  # a mounted partition is the disk's
    todo = [block.name, *tree.partitions]
    while todo:
        for holder in blocks[todo.pop()].holders:
            if holder not in tree.holders and holder in blocks:
                tree.holders.append(holder)
                tree.devs.add(blocks[holder].dev)
                todo.append(holder)
    return tree


def _add_loops(view: View, target: Node, tree: _Tree) -> None:
    """Add every loop device backed by the target or by a device of *tree*, and what they reach."""
    loops = [b for _, b in sorted(view.blocks().items()) if b.backing_file is not None]
    found = True
    while found:  # until no new loop: a loop device may back another one
        found = False
        for loop in loops:
            file = loop.backing_file or ""
            reached = target.same(view.stat(file)) or _block_rdev(view, file) in tree.devs
            if reached and loop.name not in tree.loops:
                tree.loops.append(loop.name)
                _extend(tree, _block_tree(view, loop.dev))
                found = True


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def _mounts(view: View, devs: set[int], target: Node) -> list[str]:
    """Mount points backed by one of *devs* or by the file *target*, by device number or
    by mount source."""
    found: list[str] = []
    for line in view.mountinfo():
        fields = line.split(" ")
        major, minor = fields[2].split(":")
        source = _unescape(fields[fields.index("-") + 2])
        point = _unescape(fields[4])
        by_dev = os.makedev(int(major), int(minor)) in devs or _block_rdev(view, source) in devs
        if by_dev or _is_file(view, target, source):
            found.append(point)
    return list(dict.fromkeys(found))


def _is_file(view: View, target: Node, path: str) -> bool:
    """*path* names the regular file *target* (a file mounted directly: FUSE images, ...)."""
    return target.kind == "file" and path.startswith("/") and target.same(view.stat(path))


def _block_rdev(view: View, path: str) -> int | None:
    node = view.stat(path) if path.startswith("/") else None
    return node.rdev if node is not None and node.kind == "block" else None


def _in_swap(view: View, target: Node, devs: set[int]) -> bool:
    for line in view.swaps()[1:]:
        name = _unescape(line.split()[0])
        if target.same(view.stat(name)) or _block_rdev(view, name) in devs:
            return True
    return False


def _system_reason(system: tuple[str, ...]) -> str:
    what = "root filesystem" if "/" in system else "filesystem"
    return (
        f"it holds the running system's {what} ({', '.join(system)}); "
        "this is never allowed, choose another target"
    )


def _missing(path: str, why: str = "") -> str:
    """Why a target that does not exist is refused; a bare device name gets its /dev/ node.

    ``--dut=nvme0n1`` is resolved against the working folder: its /dev/ node is the
    likely meaning when there is one.
    """
    given = Path(path)
    node = Path("/dev", given.name)
    if given.parent == Path.cwd() and node.is_block_device():
        return f"it does not exist; did you mean {node}?"
    return f"it does not exist{why}; check the path"


def _reasons(f: TargetFacts) -> Iterable[str | None]:
    """Every check in order; the first reason that is not None wins."""
    quoted = shlex.quote(f.path)
    yield None if f.exists else _missing(f.path, " (fio would create a regular file there)")
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


def refusal(facts: TargetFacts, where: str = "") -> str | None:
    """The one-line reason writing to the target is refused, or None when it is safe.

    *where* names a test host the target is on (``ssh root@lab-07``).
    """
    reason = _reason(facts)
    on = f" on {where}" if where else ""
    return None if reason is None else shown(f"refusing to write to {facts.path}{on}: {reason}")


def check_writable(path: str | Path, view: View) -> TargetFacts:
    """Inspect *path* and raise :class:`SafetyError` unless writing to it is safe (*view*:
    its machine's look at it)."""
    facts = inspect(path, view=view)
    reason = refusal(facts, view.where)
    if reason is not None:
        raise SafetyError(reason)
    return facts


def check_readable(path: str | Path, view: View) -> TargetFacts:
    """Inspect *path* and raise :class:`SafetyError` unless it is a block device or a file."""
    facts = inspect(path, view=view)
    if not facts.exists:
        raise SafetyError(shown(f"cannot read {facts.path}: {_missing(facts.path)}"))
    if facts.kind is None:
        raise SafetyError(
            shown(
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
        shown(
            f"refusing to write to {path} ({description}): {why}; "
            f"add {add} if its data may be destroyed"
        )
    )
