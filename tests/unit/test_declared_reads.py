"""Every reader of /sys and /proc reads only the files it declares: a test host's copy holds them.

Each reader runs against a fake machine whose ``read_text`` refuses any file that its
declarations (:class:`~pytest_ssd.machine.snapshot.Reads`) do not name; the globs are
expanded on the fake tree as the host's shell expands them, symlinks followed, so a file
is declared when the copy made on a host would hold it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_ssd.device import identity, summary
from pytest_ssd.device.identity import DeviceIdentity, identify_block
from pytest_ssd.device.summary import summarize
from pytest_ssd.host import journal, record, settings
from pytest_ssd.host.io import Roots
from pytest_ssd.host.journal import checked
from pytest_ssd.host.record import HostRecord, device_settings
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.machine.snapshot import Places, Reads, take
from tests.unit.host_fakes import KernelIo, fake_host, put
from tests.unit.test_summary import (
    ENDPOINT,
    NVME_LINK,
    SCSI_DEVICE,
    block_links,
    build,
    disk_files,
    nvme_info,
    nvme_tree,
)


class Undeclared(Exception):
    """A reader read a file its declarations do not name (not an OSError: nothing catches it)."""


def _expand(top: Path, base: str | None, globs: tuple[str, ...]) -> Iterator[str]:
    for pattern in globs:
        where = f"{base}/{pattern}" if base is not None else pattern
        yield from (os.path.realpath(p) for p in top.glob(where.lstrip("/")))


def declared_files(top: Path, reads: Reads, places: Places) -> set[str]:
    """The files of the fake machine at *top* that *reads* names, symlinks resolved."""
    found = {*_expand(top, None, (*reads.files, *reads.sampled))}
    for base, globs in (
        (places.node, reads.node),
        (places.disk, reads.disk),
        (places.device, reads.device),
    ):
        if base is not None:
            found |= {*_expand(top, base, globs)}
    for folder in places.above():
        found |= {*_expand(top, folder, reads.above)}
    return found


@contextmanager
def refusing(
    monkeypatch: pytest.MonkeyPatch, top: Path, reads: Reads, name: str | None = None
) -> Iterator[list[str]]:
    """Reads of files under *top* that *reads* (for block device *name*) does not declare
    raise; yields the files read."""
    places = Places.of(top / "sys", name) if name else Places()
    allowed = declared_files(top, reads, places)
    real = Path.read_text
    seen: list[str] = []

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        path = os.path.realpath(self)
        # a file that is not there is not there in a copy either: only files there are asked
        if Path(path).exists() and Path(path).is_relative_to(os.path.realpath(top)):
            if path not in allowed:
                raise Undeclared(f"/{Path(path).relative_to(os.path.realpath(top))}")
            seen.append(path)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(Path, "read_text", read_text)
        yield seen


def _device(top: Path, name: str, reads: Reads, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Identify and summarize *name* of the fake machine, each under its own declarations."""
    sysfs = top / "sys"
    with refusing(monkeypatch, top, identity.READS, name) as seen:
        found = identify_block(
            Path(f"/dev/{name}"), name, sysfs_root=sysfs, query_nvme=lambda _: nvme_info()
        )
    with refusing(monkeypatch, top, reads, name) as more:
        summarize(found, sysfs_root=sysfs)
    return [*seen, *more]


def _nvme(top: Path, subsystem: bool = False) -> None:
    ctrl = f"{ENDPOINT}/nvme/nvme0"
    parent = "devices/virtual/nvme-subsystem/nvme-subsys0" if subsystem else ctrl
    root = nvme_tree(top / "sys", ctrl=parent, disk=f"{parent}/nvme0n1", link=NVME_LINK)
    part = f"{parent}/nvme0n1/nvme0n1p1"
    files = {f"{part}/partition": "1", f"{part}/size": "2048", f"{ctrl}/model": "M"}
    # what no reader reads: refused if one did
    files |= {f"{ENDPOINT}/vendor": "0x1b36", f"{parent}/nvme0n1/uevent": "MAJOR=259"}
    links = block_links("nvme0n1p1", part)
    if subsystem:
        links |= {f"{parent}/nvme0": ctrl, f"{ctrl}/device": ENDPOINT}
    build(root, files, links)


@pytest.mark.parametrize("name", ["nvme0n1", "nvme0n1p1"])
def test_an_nvme_namespace_is_read_as_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _nvme(tmp_path)
    seen = _device(tmp_path, name, summary.READS, monkeypatch)
    assert any(p.endswith("/size") for p in seen) and any("current_link" in p for p in seen)


def test_native_multipath_is_read_as_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _nvme(tmp_path, subsystem=True)
    seen = _device(tmp_path, "nvme0n1", summary.READS, monkeypatch)
    assert any(p.endswith("/0000:01:00.0/current_link_speed") for p in seen)


def _sata(top: Path) -> None:
    disk = f"{SCSI_DEVICE}/block/sda"
    link = "devices/pci0000:00/0000:00:1f.2/ata1/link1/ata_link/link1"
    files = disk_files(disk) | {
        f"{SCSI_DEVICE}/{k}": v
        for k, v in {
            "vendor": "ATA",
            "model": "SSD",
            "rev": "2B6Q",
            "scsi_disk/0:0:0:0/cache_type": "write back",
            "queue_depth": "32",
        }.items()
    }
    files |= {f"{link}/sata_spd": "6.0 Gbps", f"{link}/hw_sata_spd_limit": "6.0 Gbps"}
    build(top / "sys", files, block_links("sda", disk) | {f"{disk}/device": SCSI_DEVICE})


def test_a_sata_disk_is_read_as_declared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _sata(tmp_path)
    seen = _device(tmp_path, "sda", summary.READS, monkeypatch)
    assert any(p.endswith("cache_type") for p in seen) and any("sata_spd" in p for p in seen)


def test_a_reader_that_reads_an_undeclared_file_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the summary without its SCSI attributes declared: the guard refuses its first read
    _sata(tmp_path)
    short = dataclasses.replace(summary.READS, device=())
    with pytest.raises(Undeclared, match="/vendor"):
        _device(tmp_path, "sda", short, monkeypatch)


def _host(top: Path) -> Roots:
    """A machine with cpufreq, THP, ASLR, processes and an NVMe namespace with a partition."""
    sysfs, procfs = fake_host(top)
    for n in range(2):  # what no reader reads: refused if one did
        put(sysfs, f"devices/system/cpu/cpu{n}/cpufreq/energy_performance_preference", "balance")
    put(procfs, "cpuinfo", "processor\t: 0\ncpu MHz\t\t: 2596.010")
    put(procfs, "7/stat", "7 (stress) R 1 0 0 0 -1 0 0 0 0 0 50 0 0 0 20 0 1 0 100 0 0")
    put(procfs, "7/status", "Name: stress")
    disk = f"{ENDPOINT}/nvme/nvme0/nvme0n1"
    files = disk_files(disk) | {f"{disk}/dev": "259:0", f"{disk}/nvme0n1p1/partition": "1"}
    links = block_links("nvme0n1", disk) | block_links("nvme0n1p1", f"{disk}/nvme0n1p1")
    build(sysfs, files, links)
    return Roots(sysfs, procfs, top / "dev")


def test_the_host_record_is_read_as_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = _host(tmp_path)
    part = DeviceIdentity(
        "/dev/nvme0n1p1",
        "block",
        "nvme0n1p1",
        1 << 20,
        512,
        512,
        False,
        True,
        "M",
        "S",
        "F",
        "nvme",
    )
    devices = {"dut": part}
    io = KernelIo(features={0x0C: "get-feature-apst.txt"})
    with refusing(monkeypatch, tmp_path, record.READS) as seen:
        tunables = [*settings.host_settings(roots), *device_settings(roots, io, devices)]
        found = HostRecord.read(roots, io, tunables, devices, busy_sample_s=0.01)
    by_key = {r.key: r for r in found.readings}
    assert by_key["scheduler"].value == "none" and by_key["governor"].value == "powersave"
    assert by_key["memory"].value and any(p.endswith("/7/stat") for p in seen)


def test_a_journals_checks_are_read_as_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = _host(tmp_path)
    entries = [
        {
            "kind": "file",
            "setting": "governor",
            "path": str(roots.sysfs / "devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "original": "powersave",
            "target": "performance",
        },
        {
            "kind": "file",
            "setting": "scheduler",
            "path": str(roots.sysfs / f"{ENDPOINT}/nvme/nvme0/nvme0n1/queue/scheduler"),
            "original": "none",
            "target": "none",
        },
    ]
    with refusing(monkeypatch, tmp_path, journal.READS):
        good, refused = checked(entries, roots, node_of=lambda _: None)
    assert len(good) == 2, refused


def test_this_machines_disks_are_identified_the_same_from_a_copy(tmp_path: Path) -> None:
    # the declarations' one script really runs here (as on a host) on this machine's sysfs
    # not loop devices: other tests attach and detach them between the two reads (a loop
    # device of its own is identified from a test host's copy in tests/e2e/test_parity.py)
    names = sorted(
        p.name for p in Path("/sys/block").iterdir() if not p.name.startswith(("zram", "loop"))
    )
    if not names:
        pytest.skip("no block device here but loop devices")
    for name in names[:4]:
        here = identify_block(Path(f"/dev/{name}"), name, query_nvme=None)
        copy = take(LOCAL, identity.READS, tmp_path / name, device=name)
        there = identify_block(Path(f"/dev/{name}"), name, sysfs_root=copy.sysfs, query_nvme=None)
        assert there == here, name
