"""This machine's declared files, read in this process as the snapshot's ``sh`` prints them.

A copy of a machine's files (:mod:`.snapshot`) is made from one command's output there;
this machine's machine-wide files (no block device's: those are read in place,
:meth:`~pytest_ssd.machine.machine.LocalMachine.sysfs`) are read here without a program,
into the same text :func:`~pytest_ssd.machine.snapshot.script` prints (``PATH:LINE`` for
every line of every file its globs name, the node and sample marks), so that the copy is
parsed and read by one code path whatever the machine.  The ``session`` mark names this
process: the processes busy beside it are the others'.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from pytest_ssd.machine.snapshot import Reads
from pytest_ssd.machine.ssh import MARK

T = TypeVar("T")


def _each(globs: tuple[str, ...], look: Callable[[Path], T]) -> Iterator[tuple[Path, T]]:
    """Each path *globs* (absolute) name, sorted as the shell expands them, with what *look*
    finds there (a path it cannot look at is passed over)."""
    for pattern in globs:
        for path in sorted(Path("/").glob(pattern.lstrip("/"))):
            try:
                yield path, look(path)
            except OSError:
                continue


def _lines(globs: tuple[str, ...]) -> Iterator[str]:
    """``grep -H ''`` of every file *globs* name (a binary or unreadable file: nothing)."""
    for path, data in _each(globs, Path.read_bytes):
        if data and b"\0" not in data:
            lines = data.decode(errors="replace").split("\n")  # grep's lines: \n alone
            for line in lines[:-1] if data.endswith(b"\n") else lines:
                yield f"{path}:{line}"


def _nodes(globs: tuple[str, ...]) -> Iterator[str]:
    """``stat -c '%n %f %t %T'`` of every node *globs* name: mode, major, minor in hex."""
    for path, st in _each(globs, Path.lstat):
        numbers = f"{os.major(st.st_rdev):x} {os.minor(st.st_rdev):x}"
        yield f"{MARK}stat {path} {st.st_mode:x} {numbers}"


def text(reads: Reads, seconds: float) -> str:
    """What :func:`~pytest_ssd.machine.snapshot.script` prints of this machine for *reads*
    (no block device), its samples *seconds* apart."""
    out = [f"{MARK}pid {os.getpid()}", f"{MARK}session {os.getpid()}"]
    out += [f"{MARK}ticks {os.sysconf('SC_CLK_TCK')}", *_lines(reads.files), *_nodes(reads.nodes)]
    if reads.sampled:
        out.append(f"{MARK}sample 1")
        if seconds:
            out += _lines(reads.sampled)
        time.sleep(seconds)
        out.append(f"{MARK}sample 2")
        out += _lines(reads.sampled)
    return "\n".join(out) + "\n"
