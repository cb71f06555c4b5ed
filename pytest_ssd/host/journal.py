"""--ssd-tune's restore journal, and what a later session accepts from it.

The journal is the machine's own (:mod:`pytest_ssd.statedir`, mode 0600), and whatever
a session reads back from it, it writes to the kernel as root.  So an entry is only
trusted to name a setting and a value: the file it goes to is one this package computes
itself for that setting on this machine (the same functions that planned the change),
the value must be one the kernel offers there, and an NVMe device must be the kernel's
own node in ``/dev``.  Anything else is refused with one line and never written.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.documents import loads_json
from pytest_ssd.errors import ConfigError
from pytest_ssd.host import settings
from pytest_ssd.host.changes import Change, FeatureWrite, FileWrite, change_from_dict
from pytest_ssd.host.io import Roots, TuneError, read_attribute
from pytest_ssd.host.nvme_features import APST
from pytest_ssd.host.settings import FileSetting
from pytest_ssd.machine.snapshot import Reads
from pytest_ssd.statedir import read_private, write_private

#: a value a kernel attribute takes: one word (and one of those it lists, where it lists them)
_WORD = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: values of attributes that do not list them
_VALUES = {"aslr": ("0", "1", "2")}
#: a controller (character device), or a namespace or its partition (block device)
_NVME_NAME = re.compile(r"^nvme\d+(n\d+(p\d+)?)?$")
#: APST's data buffer: 32 transition entries of 8 bytes (or none, as nvme-cli read it)
_APST_TABLE = 256
#: what :func:`checked` reads: the settings' files, and the NVMe nodes with their numbers
READS = settings.READS | Reads(
    files=("/sys/block/nvme*/dev", "/sys/block/nvme*/nvme*/dev", "/sys/class/nvme/nvme*/dev"),
    nodes=("/dev/nvme*",),
)


def start_time(procfs: Path, pid: int) -> str | None:
    """The process's start time in clock ticks since boot (22nd field of stat): None if gone."""
    text = read_attribute(procfs / str(pid) / "stat")
    if text is None or ")" not in text:
        return None
    return text.rpartition(")")[2].split()[19]


@dataclass
class Journal:
    """The restore file: who tuned (pid and start time), and what goes back."""

    path: Path
    pid: int
    started: str | None
    changes: list[Change] = field(default_factory=list)

    def text(self) -> str:
        """The journal as its file holds it (here, or on a test host)."""
        data = {
            "pid": self.pid,
            "started": self.started,
            "changes": [c.as_dict() for c in self.changes],
        }
        return json.dumps(data, indent=1)

    def write(self) -> None:
        """Atomically, privately and flushed to disk: it must survive the crash it is for."""
        write_private(self.path, self.text())

    @classmethod
    def load(cls, path: Path) -> tuple[Journal, list[dict[str, Any]]]:
        """The journal and its raw entries (for :func:`checked`, before anything is written)."""
        try:
            text = read_private(path)
        except ConfigError as exc:
            raise TuneError(f"{exc}; check it and delete it") from None
        except OSError as exc:
            raise TuneError(f"{path}: not a restore file ({exc}); check and delete it") from None
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text: str, path: Path) -> tuple[Journal, list[dict[str, Any]]]:
        """The journal in *text* (the file at *path*) and its raw entries."""
        try:
            data: dict[str, Any] = loads_json(text)
            entries = [dict(c) for c in data["changes"]]
            started = data.get("started")
            return cls(path, int(data["pid"]), None if started is None else str(started)), entries
        except (ValueError, KeyError, TypeError) as exc:
            raise TuneError(f"{path}: not a restore file ({exc}); check and delete it") from None

    def running(self, procfs: Path) -> bool:
        """Its writer still runs: the same pid, started at the same time (not a reused pid)."""
        return self.started is not None and start_time(procfs, self.pid) == self.started


def _short(value: object) -> str:
    """*value* quoted on one line (a file's text may hold anything), at most 200 characters."""
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _file_settings(roots: Roots, name: str) -> list[FileSetting]:
    """The kernel files this package itself would tune for setting *name*, on this machine."""
    if name == "scheduler":
        # as settings.scheduler names it for each block device (a partition: its disk's)
        folder = roots.sysfs / "class" / "block"
        nodes = sorted(folder.iterdir()) if folder.is_dir() else []
        disks = [n.resolve().parent if (n / "partition").exists() else n for n in nodes]
        queues = tuple(d / "queue" / "scheduler" for d in disks)
        return [FileSetting(name, "I/O scheduler", "none", queues, "", bracketed=True)]
    makers = {
        "governor": settings.governor,
        "boost": settings.boost,
        "thp": settings.transparent_hugepages,
        "aslr": settings.aslr,
    }
    return [makers[name](roots)] if name in makers else []


def _file_change(entry: FileWrite, roots: Roots) -> FileWrite | str:
    """*entry* written to the file computed for its setting, or why it is refused."""
    own = [(s, p) for s in _file_settings(roots, entry.setting) for p in s.paths if p == entry.path]
    if not own:
        return f"not a file --ssd-tune sets for {_short(entry.setting)}"
    setting, path = own[0]
    if not path.is_file():
        return "no such file here (no file is ever created)"
    offered = _VALUES.get(entry.setting) or setting.choices(path) or [r for r, _ in setting.names]
    if not _WORD.match(entry.original) or (offered and entry.original not in offered):
        return f"not a value it takes ({' '.join(offered) or 'one word'})"
    return FileWrite(entry.setting, path, entry.original, entry.target)


#: a device node's (st_mode, st_rdev), None when there is none; this machine's by default
NodeOf = Callable[[Path], tuple[int, int] | None]


def node_here(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_mode, st.st_rdev


def _nvme_node(device: str, roots: Roots, node_of: NodeOf = node_here) -> Path | str:
    """The kernel's NVMe node *device* names in ``/dev``, checked against sysfs; or why not."""
    node = roots.dev / Path(device).name
    if str(node) != device or not _NVME_NAME.match(node.name):
        return f"not an NVMe device node in {roots.dev}"
    namespace = "n" in node.name[len("nvme") :]
    folder = roots.sysfs / "class" / ("block" if namespace else "nvme") / node.name
    found = node_of(node)
    if found is None:
        return "no such device here"
    mode, rdev = found
    kind = stat.S_ISBLK if namespace else stat.S_ISCHR
    number = f"{os.major(rdev)}:{os.minor(rdev)}"
    if not kind(mode) or read_attribute(folder / "dev") != number:
        return f"not the kernel's {node.name} (see {folder}/dev)"
    return node


def _feature_change(
    entry: FeatureWrite, roots: Roots, node_of: NodeOf = node_here
) -> FeatureWrite | str:
    """*entry* sent to the device node computed for it, or why it is refused."""
    if entry.setting != "apst" or entry.feature != APST:
        return f"not a feature --ssd-tune sets ({_short(entry.setting)}, {entry.feature:#04x})"
    node = _nvme_node(entry.device, roots, node_of)
    if isinstance(node, str):
        return node
    if entry.original not in (0, 1):
        return "not a value APST takes (0 or 1)"
    try:
        table = bytes.fromhex(entry.data)
    except ValueError:
        return "its data buffer is not hex"
    if len(table) not in (0, _APST_TABLE):
        return f"its data buffer is not an APST table ({_APST_TABLE} bytes)"
    return FeatureWrite(entry.setting, str(node), APST, entry.original, entry.target, table.hex())


def _shown(entry: dict[str, Any]) -> str:
    where = entry.get("path", entry.get("device"))
    return (
        f"setting {_short(entry.get('setting'))}, value {_short(entry.get('original'))},"
        f" at {_short(where)}"
    )


def checked(
    entries: Iterable[dict[str, Any]], roots: Roots, node_of: NodeOf = node_here
) -> tuple[list[Change], list[str]]:
    """The changes *entries* ask for, each at the place this package computes for its
    setting with a value it takes there; and one line for each entry refused (never written).

    *node_of* tells a device node's type and number (a test host's: from its ``stat``).
    """
    good: list[Change] = []
    refused: list[str] = []
    for entry in entries:
        try:
            change = change_from_dict(entry)
        except TuneError as exc:
            refused.append(f"{_short(entry)}: {exc}")
            continue
        if isinstance(change, FileWrite):
            found: Change | str = _file_change(change, roots)
        else:
            found = _feature_change(change, roots, node_of)
        if isinstance(found, str):
            refused.append(f"{_shown(entry)}: {found}")
        else:
            good.append(found)
    return good, refused
