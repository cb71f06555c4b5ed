"""Host settings on fake sysfs/procfs trees: reading, "not available here", apply and restore."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.host import NOT_AVAILABLE, Roots, TuneError
from pytest_ssd.host.settings import host_settings, scheduler
from tests.unit.host_fakes import KernelIo, fake_host, put, snapshot

LOOP = DeviceIdentity(
    path="/dev/loop3",
    kind="block",
    kernel_name="loop3",
    size_bytes=2**30,
    logical_block_size=512,
    physical_block_size=512,
    rotational=False,
    discard=True,
    model=None,
    serial=None,
    firmware=None,
    transport="loop",
)


def _values(roots: Roots) -> dict[str, str | None]:
    found = [*host_settings(roots), scheduler(roots, "dut", LOOP)]
    return {s.key: s.read().value for s in found}


def test_every_setting_is_read_from_its_file(tmp_path: Path) -> None:
    roots = Roots(*fake_host(tmp_path))
    assert _values(roots) == {
        "governor": "powersave",
        "boost": "on",
        "thp": "madvise",
        "aslr": "2",
        "scheduler": "mq-deadline",
    }
    reading = scheduler(roots, "dut", LOOP).read()
    assert reading.device == "dut" and reading.differs
    assert reading.warning() == "I/O scheduler (dut) is mq-deadline, the method recommends none"


def test_a_machine_without_the_files_says_not_available_here(tmp_path: Path) -> None:
    roots = Roots(tmp_path / "sys", tmp_path / "proc")
    readings = [*(s.read() for s in host_settings(roots)), scheduler(roots, "d", LOOP).read()]
    assert [r.value for r in readings] == [None] * 5
    assert all(r.shown().startswith(f"{NOT_AVAILABLE} (") for r in readings)
    assert not any(r.differs for r in readings), "nothing to warn about what cannot be seen"
    assert "no cpufreq driver" in readings[0].source
    assert [s.changes() for s in host_settings(roots)] == [[], [], [], []]


def test_a_regular_file_has_no_scheduler(tmp_path: Path) -> None:
    file = dataclasses.replace(LOOP, kind="file", kernel_name=None)
    reading = scheduler(Roots(tmp_path, tmp_path), "f", file).read()
    assert reading.value is None and reading.source == "a regular file has no I/O scheduler"


def test_cpus_that_disagree_are_counted(tmp_path: Path) -> None:
    sysfs, procfs = fake_host(tmp_path, cpus=3)
    put(sysfs, "devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance")
    reading = host_settings(Roots(sysfs, procfs))[0].read()
    assert reading.value == "performance ×1, powersave ×2"
    assert reading.source.endswith("cpu0/cpufreq/scaling_governor and 2 more")
    assert len(host_settings(Roots(sysfs, procfs))[0].changes()) == 2, "only the two off"


def test_apply_then_restore_gives_back_every_file_exactly(tmp_path: Path) -> None:
    sysfs, procfs = fake_host(tmp_path)
    roots, io = Roots(sysfs, procfs), KernelIo()
    before = snapshot(sysfs, procfs)
    tunables = [*host_settings(roots), scheduler(roots, "dut", LOOP)]
    changes = [c for s in tunables for c in s.changes()]
    for change in changes:
        change.apply(io)
    assert _values(roots) == {
        "governor": "performance",
        "boost": "off",
        "thp": "never",
        "aslr": "0",
        "scheduler": "none",
    }
    assert (sysfs / "kernel/mm/transparent_hugepage/enabled").read_text() == (
        "always madvise [never]\n"
    )
    assert (sysfs / "devices/system/cpu/intel_pstate/no_turbo").read_text() == "1\n"
    for change in reversed(changes):
        change.restore(io)
    assert snapshot(sysfs, procfs) == before, "brackets and values exactly as found"


def test_settings_already_as_recommended_need_no_change(tmp_path: Path) -> None:
    sysfs, procfs = fake_host(tmp_path)
    put(sysfs, "kernel/mm/transparent_hugepage/enabled", "always madvise [never]")
    put(procfs, "sys/kernel/randomize_va_space", "0")
    roots = Roots(sysfs, procfs)
    assert [len(s.changes()) for s in host_settings(roots)] == [2, 1, 0, 0]


def test_acpi_cpufreq_boost_and_per_policy_boost(tmp_path: Path) -> None:
    sysfs = tmp_path / "sys"
    put(sysfs, "devices/system/cpu/cpufreq/policy0/boost", "1")
    put(sysfs, "devices/system/cpu/cpufreq/policy1/boost", "1")
    boost = host_settings(Roots(sysfs, tmp_path))[1]
    assert boost.read().value == "on"
    assert [(c.target, c.original) for c in boost.changes()] == [("0", "1")] * 2
    put(sysfs, "devices/system/cpu/cpufreq/boost", "0")
    assert host_settings(Roots(sysfs, tmp_path))[1].read().value == "off"


def test_a_governor_the_kernel_does_not_offer_is_refused(tmp_path: Path) -> None:
    sysfs, procfs = fake_host(tmp_path, cpus=1)
    put(sysfs, "devices/system/cpu/cpu0/cpufreq/scaling_available_governors", "schedutil")
    with pytest.raises(TuneError, match="does not offer 'performance' \\(offers schedutil\\)"):
        host_settings(Roots(sysfs, procfs))[0].changes()


def test_scheduler_of_a_partition_is_its_disk_queue(tmp_path: Path) -> None:
    sysfs = tmp_path / "sys"
    disk = sysfs / "devices" / "pci0" / "block" / "sda"
    put(disk, "queue/scheduler", "[mq-deadline] none")
    put(disk, "sda1/partition", "1")
    (sysfs / "class" / "block").mkdir(parents=True)
    (sysfs / "class" / "block" / "sda1").symlink_to(disk / "sda1")
    part = dataclasses.replace(LOOP, kernel_name="sda1")
    setting = scheduler(Roots(sysfs, tmp_path), "sda1", part)
    assert setting.read().value == "mq-deadline"
    assert setting.read().source == str(disk / "queue" / "scheduler")
