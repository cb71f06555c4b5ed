"""--ssd-tune's tuner: journal first, restore on failure and interrupt, the machine's lock."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.host import RESTORE_FILE, Roots, TuneError, Tuner
from pytest_ssd.host.nvme_features import APST
from tests.unit.host_fakes import KernelIo, fake_host, nvme_node, put, snapshot
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
FAST = 0.01  # seconds spent looking for busy processes (the fake /proc has none)


def tuner_host(tmp_path: Path) -> tuple[Roots, KernelIo, Path]:
    """A fake machine with a loop device and an NVMe namespace; the private state folder."""
    sysfs, procfs = fake_host(tmp_path)
    roots = Roots(sysfs, procfs, tmp_path / "dev")
    put(sysfs, "class/block/nvme0n1/queue/scheduler", "[none] mq-deadline")
    nvme_node(roots)
    return roots, KernelIo(features={APST: "get-feature-apst.txt"}), tmp_path / "state"


@pytest.fixture
def host(tmp_path: Path) -> tuple[Roots, KernelIo, Path]:
    return tuner_host(tmp_path)


def test_tune_then_restore_leaves_everything_as_found(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    before = snapshot(roots.sysfs, roots.procfs)
    tuner = Tuner(state, True, roots, io, FAST)
    record = tuner.record({"loop3": LOOP, "nvme0n1": NVME})
    shown = {(r.key, r.device): r.value for r in record.readings}
    assert shown[("governor", None)] == "performance" and shown[("boost", None)] == "off"
    assert shown[("thp", None)] == "never" and shown[("aslr", None)] == "0"
    assert shown[("scheduler", "loop3")] == "none" and shown[("apst", "nvme0n1")] == "off"
    assert shown[("power-state", "nvme0n1")] is None, "no 0x02 in this fake: not available"
    assert len(tuner.log.changed) == 7  # 2 governors, boost, THP, ASLR, loop3 scheduler, APST
    assert (state / RESTORE_FILE).is_file()
    tuner.restore()
    tuner.restore()  # idempotent: sessionfinish, then unconfigure
    assert snapshot(roots.sysfs, roots.procfs) == before
    assert io.features[APST] == "get-feature-apst.txt", "APST back on"
    assert not (state / RESTORE_FILE).exists()
    assert len(tuner.log.restored) == 7 and tuner.log.failed == []


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
    Tuner(state, True, roots, io, FAST).record({"loop3": LOOP})
    journal = seen[0]
    assert journal["pid"] == os.getpid()
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
        Tuner(state, True, roots, io, FAST).record({"loop3": LOOP})
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
        Tuner(state, True, roots, io, FAST).record({})
    assert snapshot(roots.sysfs, roots.procfs) == before


def test_without_the_option_nothing_is_touched(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    record = Tuner(state, False, roots, io, FAST).record({"loop3": LOOP})
    assert io.writes == [] and not [c for c in io.nvme_calls if c[0] == "set-feature"]
    assert not (state / RESTORE_FILE).exists()
    assert "Transparent huge pages is madvise, the method recommends never" in record.warnings()


def test_a_setting_that_cannot_be_restored_keeps_the_file(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    tuner = Tuner(state, True, roots, io, FAST)
    tuner.record({})
    io.refuse.add(roots.sysfs / THP)
    tuner.restore()
    assert [line for line in tuner.log.failed if "transparent_hugepage" in line]
    assert (state / RESTORE_FILE).exists(), "the next session tries again"
    assert any("could NOT restore" in line for line in tuner.summary_lines())


def test_restore_frees_the_machine_also_when_nothing_was_changed(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    first = Tuner(state, True, roots, io, FAST)
    first.recover()  # holds the machine's lock for its session
    with pytest.raises(TuneError, match=rf"^pytest-ssd \(pid {os.getpid()} .*still running"):
        Tuner(state, True, roots, io, FAST).recover()
    first.restore()
    Tuner(state, True, roots, io, FAST).recover()  # the lock is free again
