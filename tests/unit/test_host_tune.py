"""--ssd-tune's tuner: journal first, restore on failure and interrupt, the machine's lock."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.host import RESTORE_FILE, HostRecord, Roots, TuneError, Tuner
from pytest_ssd.host.nvme_features import APST
from pytest_ssd.machine.machine import LOCAL
from tests.unit.host_fakes import KernelIo, fake_copy, fake_host, nvme_node, put, snapshot
from tests.unit.test_host_settings import LOOP

NVME = DeviceIdentity(
    path="/dev/nvme0n1",
    kind="block",
    kernel_name="nvme0n1",
    size_bytes=2**30,
    logical_block_size=512,
    physical_block_size=512,
    rotational=False,
    discard=True,
    model="M",
    serial="S",
    firmware="F",
    transport="nvme",
)
THP = "kernel/mm/transparent_hugepage/enabled"


def tuner_host(tmp_path: Path) -> tuple[Roots, KernelIo, Path]:
    """A fake machine with a loop device and an NVMe namespace; the private state folder."""
    sysfs, procfs = fake_host(tmp_path)
    roots = Roots(sysfs, procfs, tmp_path / "dev")
    put(sysfs, "class/block/nvme0n1/queue/scheduler", "[none] mq-deadline")
    nvme_node(roots)
    return (
        roots,
        KernelIo(features={APST: "get-feature-apst.txt"}, root=tmp_path),
        tmp_path / "state",
    )


def tuner(state: Path, requested: bool, roots: Roots, io: KernelIo) -> Tuner:
    """This machine's tuner, its journal in *state*, its kernel the fake one at *roots*."""
    root = roots.sysfs.parent
    return Tuner(LOCAL, requested, folder=state, io=io, copy=lambda _to, _s: fake_copy(root))


def record(tuner: Tuner, devices: dict[str, DeviceIdentity]) -> HostRecord:
    """Tune (if asked) and read: the record of what the run runs under."""
    return HostRecord(tuple(tuner.start(devices, [])))


@pytest.fixture
def host(tmp_path: Path) -> tuple[Roots, KernelIo, Path]:
    return tuner_host(tmp_path)


def test_tune_then_restore_leaves_everything_as_found(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    before = snapshot(roots.sysfs, roots.procfs)
    tuned = tuner(state, True, roots, io)
    found = record(tuned, {"loop3": LOOP, "nvme0n1": NVME})
    shown = {(r.key, r.device): r.value for r in found.readings}
    assert shown[("governor", None)] == "performance" and shown[("boost", None)] == "off"
    assert shown[("thp", None)] == "never" and shown[("aslr", None)] == "0"
    assert shown[("scheduler", "loop3")] == "none" and shown[("apst", "nvme0n1")] == "off"
    assert shown[("power-state", "nvme0n1")] is None, "no 0x02 in this fake: not available"
    assert len(tuned.log.changed) == 7  # 2 governors, boost, THP, ASLR, loop3 scheduler, APST
    assert (state / RESTORE_FILE).is_file()
    tuned.restore()
    tuned.restore()  # idempotent: sessionfinish, then unconfigure
    assert snapshot(roots.sysfs, roots.procfs) == before
    assert io.features[APST] == "get-feature-apst.txt", "APST back on"
    assert not (state / RESTORE_FILE).exists()
    assert len(tuned.log.restored) == 7 and tuned.log.failed == []


def test_the_restore_file_is_written_before_the_first_change(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    seen: list[dict[str, object]] = []
    write = io.write

    def spy(path: Path, value: str) -> None:
        if not seen:
            seen.append(json.loads((state / RESTORE_FILE).read_text()))
        write(path, value)

    io.write = spy  # type: ignore[method-assign]
    record(tuner(state, True, roots, io), {"loop3": LOOP})
    journal = seen[0]
    started = Path("/proc/self/stat").read_text().rpartition(")")[2].split()[19]
    assert (journal["pid"], journal["started"]) == (os.getpid(), started), (
        "this machine's lock is held by this process (no flock program): the journal's writer"
    )
    changes = journal["changes"]
    assert isinstance(changes, list) and len(changes) == 6, "every planned change, up front"
    assert {"setting": "thp", "original": "madvise", "target": "never"}.items() <= {
        **next(c for c in changes if c["setting"] == "thp")
    }.items()


def test_a_failing_change_restores_what_was_changed(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    before = snapshot(roots.sysfs, roots.procfs)
    io.refuse.add(roots.procfs / "sys/kernel/randomize_va_space")
    with pytest.raises(TuneError, match=r"randomize_va_space.*every setting changed is back"):
        record(tuner(state, True, roots, io), {"loop3": LOOP})
    assert len(io.writes) > 4, "governors, boost and THP were changed first"
    assert snapshot(roots.sysfs, roots.procfs) == before
    assert not (state / RESTORE_FILE).exists()


def test_ctrl_c_while_tuning_restores_and_propagates(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    before = snapshot(roots.sysfs, roots.procfs)
    write = io.write
    calls = []

    def interrupted(path: Path, value: str) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        write(path, value)

    io.write = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        record(tuner(state, True, roots, io), {})
    assert snapshot(roots.sysfs, roots.procfs) == before


def test_without_the_option_nothing_is_touched(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    found = record(tuner(state, False, roots, io), {"loop3": LOOP})
    assert io.writes == [] and not [c for c in io.nvme_calls if c[0] == "set-feature"]
    assert not (state / RESTORE_FILE).exists()
    assert "Transparent huge pages is madvise, the method recommends never" in found.warnings()


def test_a_setting_that_cannot_be_restored_keeps_the_file(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    tuned = tuner(state, True, roots, io)
    record(tuned, {})
    io.refuse.add(roots.sysfs / THP)
    tuned.restore()
    assert [line for line in tuned.log.failed if "transparent_hugepage" in line]
    assert (state / RESTORE_FILE).exists(), "the next session tries again"
    assert any("could NOT restore" in line for line in tuned.summary_lines())


def test_restore_frees_the_machine_also_when_nothing_was_changed(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    first = tuner(state, True, roots, io)
    first.recover()  # holds the machine's lock for its session
    held = rf"^pytest-ssd \(pid {os.getpid()} \(.*python.*\)\) has tuned this"
    with pytest.raises(TuneError, match=held + r" machine and is still running"):
        tuner(state, True, roots, io).recover()
    first.restore()
    tuner(state, True, roots, io).recover()  # the lock is free again
