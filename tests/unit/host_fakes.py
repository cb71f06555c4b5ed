"""A fake kernel and a fake nvme-cli for the host package's tests."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_ssd.host.io import Roots
from pytest_ssd.host.tree import Tree
from pytest_ssd.proc import Completed

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "nvme"


def put(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


@dataclass
class KernelIo:
    """Writes as the kernel takes them: a ``[bracketed]`` file moves its brackets."""

    #: writes to these paths fail with EINVAL (a value the kernel refuses)
    refuse: set[Path] = field(default_factory=set)
    writes: list[tuple[Path, str]] = field(default_factory=list)
    nvme_calls: list[list[str]] = field(default_factory=list)
    #: feature id -> golden file get-feature prints
    features: dict[int, str] = field(default_factory=dict)
    #: the data buffers set-feature sent
    sent: list[bytes] = field(default_factory=list)
    #: the fake machine's root: a machine's path (``/sys/...``) is written under it
    root: Path | None = None

    def write(self, path: Path, value: str) -> None:
        if self.root is not None and path.is_absolute():
            path = self.root / path.relative_to("/")
        if path in self.refuse or not path.exists():
            raise OSError(errno.EINVAL, "Invalid argument")
        self.writes.append((path, value))
        old = path.read_text().strip()
        if "[" in old:
            choices = old.replace("[", " ").replace("]", " ").split()
            if value not in choices:
                raise OSError(errno.EINVAL, "Invalid argument")
            value = " ".join(f"[{c}]" if c == value else c for c in choices)
        path.write_text(value + "\n")

    def nvme(self, args: list[str]) -> Completed:
        self.nvme_calls.append(args)
        fid = int(next(a for a in args if a.startswith("--feature-id=")).split("=")[1])
        if args[0] == "get-feature":
            if fid not in self.features:  # nvme-cli 2.3 prints nothing for Invalid Field
                return Completed(tuple(args), 22, "", "", 0.01)
            return Completed(tuple(args), 0, (GOLDEN / self.features[fid]).read_text(), "", 0.01)
        value = int(next(a for a in args if a.startswith("--value=")).split("=")[1])
        data = [a.split("=", 1)[1] for a in args if a.startswith("--data=")]
        self.sent.append(Path(data[0]).read_bytes() if data else b"")
        if fid == 0x0C:
            self.features[fid] = "get-feature-apst.txt" if value & 1 else "get-feature-apst-off.txt"
        return Completed(
            tuple(args), 0, "set-feature:0x0c (Autonomous Power State Transition)", "", 0.01
        )


def fake_host(root: Path, cpus: int = 2) -> tuple[Path, Path]:
    """A sysfs and procfs with cpufreq, boost, THP, ASLR and a loop device: (sysfs, procfs)."""
    sysfs, procfs = root / "sys", root / "proc"
    for cpu in range(cpus):
        put(sysfs, f"devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor", "powersave")
        put(
            sysfs,
            f"devices/system/cpu/cpu{cpu}/cpufreq/scaling_available_governors",
            "performance powersave",
        )
    put(sysfs, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "3400000")
    put(sysfs, "devices/system/cpu/cpu0/cpufreq/scaling_driver", "intel_pstate")
    put(sysfs, "devices/system/cpu/intel_pstate/no_turbo", "0")
    put(sysfs, "kernel/mm/transparent_hugepage/enabled", "always [madvise] never")
    put(sysfs, "class/block/loop3/queue/scheduler", "[mq-deadline] kyber bfq none")
    put(procfs, "sys/kernel/randomize_va_space", "2")
    put(procfs, "meminfo", "MemTotal:       16303428 kB\nMemAvailable:   12000000 kB")
    return sysfs, procfs


def nvme_node(roots: Roots, name: str = "nvme0n1", minor: int = 0) -> Path:
    """A block device node in the fake /dev and its sysfs entry, as the kernel makes them."""
    put(roots.sysfs, f"class/block/{name}/dev", f"259:{minor}")
    roots.dev.mkdir(parents=True, exist_ok=True)
    node = roots.dev / name
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(259, minor))
    except PermissionError:
        pytest.skip("a block device node needs CAP_MKNOD (root)")
    return node


def snapshot(sysfs: Path, procfs: Path) -> dict[str, str]:
    """Every file of the fake trees, with its exact content."""
    return {
        str(p): p.read_text() for root in (sysfs, procfs) for p in root.rglob("*") if p.is_file()
    }


def fake_copy(root: Path) -> Tree:
    """The fake machine under *root* (``sys``, ``proc``, ``dev``) as a tuner's copy of it:
    its device nodes as a machine's ``stat`` describes them."""
    (root / "sample" / "proc").mkdir(parents=True, exist_ok=True)
    dev = root / "dev"
    found = sorted(dev.iterdir()) if dev.is_dir() else []
    nodes = {f"/dev/{p.name}": (p.lstat().st_mode, p.lstat().st_rdev) for p in found}
    return Tree(root, {"pid": "0"}, nodes=nodes)
