"""--ssd-tune's tuner: restore file first, restore on failure and interrupt, leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.host import RESTORE_FILE, Roots, SystemIo, TuneError, Tuner
from pytest_ssd.host.changes import FileWrite
from pytest_ssd.host.nvme_features import APST
from pytest_ssd.host.tune import LOCK_FILE
from pytest_ssd.statedir import write_private
from tests.unit.host_fakes import KernelIo, fake_host, put, snapshot
from tests.unit.test_host_settings import LOOP

NVME = DeviceIdentity(
    path="/dev/nvme0n1", kind="block", kernel_name="nvme0n1", size_bytes=2**30,
    logical_block_size=512, physical_block_size=512, rotational=False, discard=True,
    model="M", serial="S", firmware="F", transport="nvme",
)  # fmt: skip
THP = "kernel/mm/transparent_hugepage/enabled"
FAST = 0.01  # seconds spent looking for busy processes (the fake /proc has none)


@pytest.fixture
def host(tmp_path: Path) -> tuple[Roots, KernelIo, Path]:
    sysfs, procfs = fake_host(tmp_path)
    put(sysfs, "class/block/nvme0n1/queue/scheduler", "[none] mq-deadline")
    return Roots(sysfs, procfs), KernelIo(features={APST: "get-feature-apst.txt"}), tmp_path / "r"


def test_tune_then_restore_leaves_everything_as_found(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, reports = host
    before = snapshot(roots.sysfs, roots.procfs)
    tuner = Tuner(reports, True, roots, io, FAST)
    record = tuner.start({"loop3": LOOP, "nvme0n1": NVME})
    shown = {(r.key, r.device): r.value for r in record.readings}
    assert shown[("governor", None)] == "performance" and shown[("boost", None)] == "off"
    assert shown[("thp", None)] == "never" and shown[("aslr", None)] == "0"
    assert shown[("scheduler", "loop3")] == "none" and shown[("apst", "nvme0n1")] == "off"
    assert shown[("power-state", "nvme0n1")] is None, "no 0x02 in this fake: not available"
    assert len(tuner.log.changed) == 7  # 2 governors, boost, THP, ASLR, loop3 scheduler, APST
    assert (reports / RESTORE_FILE).is_file()
    tuner.restore()
    tuner.restore()  # idempotent: sessionfinish, then unconfigure
    assert snapshot(roots.sysfs, roots.procfs) == before
    assert io.features[APST] == "get-feature-apst.txt", "APST back on"
    assert not (reports / RESTORE_FILE).exists()
    assert len(tuner.log.restored) == 7 and tuner.log.failed == []


def test_the_restore_file_is_written_before_the_first_change(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, reports = host
    seen: list[dict[str, object]] = []
    write = io.write

    def spy(path: Path, value: str) -> None:
        if not seen:
            seen.append(json.loads((reports / RESTORE_FILE).read_text()))
        write(path, value)

    io.write = spy  # type: ignore[method-assign]
    Tuner(reports, True, roots, io, FAST).start({"loop3": LOOP})
    journal = seen[0]
    assert journal["pid"] == os.getpid()
    changes = journal["changes"]
    assert isinstance(changes, list) and len(changes) == 6, "every planned change, up front"
    assert {"setting": "thp", "original": "madvise", "target": "never"}.items() <= {
        **next(c for c in changes if c["setting"] == "thp")
    }.items()


def test_a_failing_change_restores_what_was_changed(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, reports = host
    before = snapshot(roots.sysfs, roots.procfs)
    io.refuse.add(roots.procfs / "sys/kernel/randomize_va_space")
    with pytest.raises(TuneError, match=r"randomize_va_space.*every setting changed is back"):
        Tuner(reports, True, roots, io, FAST).start({"loop3": LOOP})
    assert len(io.writes) > 4, "governors, boost and THP were changed first"
    assert snapshot(roots.sysfs, roots.procfs) == before
    assert not (reports / RESTORE_FILE).exists()


def test_ctrl_c_while_tuning_restores_and_propagates(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, reports = host
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
        Tuner(reports, True, roots, io, FAST).start({})
    assert snapshot(roots.sysfs, roots.procfs) == before


def test_without_the_option_nothing_is_touched(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, reports = host
    record = Tuner(reports, False, roots, io, FAST).start({"loop3": LOOP})
    assert io.writes == [] and not [c for c in io.nvme_calls if c[0] == "set-feature"]
    assert not (reports / RESTORE_FILE).exists()
    assert "Transparent huge pages is madvise, the method recommends never" in record.warnings()


def _journal(reports: Path, *entries: dict[str, object], pid: int = 4242) -> None:
    reports.mkdir(mode=0o700, exist_ok=True)
    data = {"pid": pid, "started": "777", "changes": list(entries)}
    write_private(reports / RESTORE_FILE, json.dumps(data))


def _leftover(reports: Path, roots: Roots, pid: int) -> None:
    change = FileWrite("thp", roots.sysfs / THP, "madvise", "never")
    _journal(reports, change.as_dict(), pid=pid)
    change.apply(KernelIo())


def test_a_leftover_of_a_dead_session_is_restored_first(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, reports = host
    _leftover(reports, roots, 4242)  # nobody holds the lock: its session is gone
    assert (roots.sysfs / THP).read_text() == "always madvise [never]\n"
    tuner = Tuner(reports, False, roots, io, FAST)
    tuner.recover()
    assert (roots.sysfs / THP).read_text() == "always [madvise] never\n"
    assert not (reports / RESTORE_FILE).exists()
    assert tuner.log.recovered == [f"{roots.sysfs / THP}: madvise again (left by pid 4242)"]


def test_a_live_session_is_left_alone_and_blocks_tuning(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, reports = host
    _leftover(reports, roots, os.getpid())
    lock = reports / LOCK_FILE
    holder = subprocess.Popen(["flock", "-o", str(lock), "sleep", "30"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while str(holder.pid) not in Path("/proc/locks").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        Tuner(reports, False, roots, io, FAST).recover()
        assert (roots.sysfs / THP).read_text() == "always madvise [never]\n", "not ours"
        with pytest.raises(TuneError) as info:
            Tuner(reports, True, roots, io, FAST).recover()
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
    assert str(info.value) == (
        f"pytest-ssd (pid {holder.pid} (flock -o {lock} sleep 30)) has tuned this machine and"
        f" is still running ({reports / RESTORE_FILE}): let it finish before --ssd-tune"
    )


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"setting": "thp", "path": "{victim}", "original": "madvise", "target": "never"},
         "is not a file --ssd-tune sets for 'thp'"),
        ({"setting": "cron", "path": "{victim}", "original": "* * * * * root x", "target": ""},
         "is not a file --ssd-tune sets for 'cron'"),
        ({"setting": "thp", "path": "{thp}", "original": "yes-please", "target": "never"},
         "'yes-please' is not a value"),
        ({"setting": "aslr", "path": "{aslr}", "original": "7", "target": "0"},
         "'7' is not a value"),
    ],
)  # fmt: skip
def test_a_journal_entry_is_restored_only_to_its_own_path_and_values(
    host: tuple[Roots, KernelIo, Path], tmp_path: Path, entry: dict[str, str], why: str
) -> None:
    roots, io, reports = host
    victim = tmp_path / "etc" / "cron.d" / "pwned"
    paths = {"victim": victim, "thp": roots.sysfs / THP,
             "aslr": roots.procfs / "sys/kernel/randomize_va_space"}  # fmt: skip
    before = snapshot(roots.sysfs, roots.procfs)
    _journal(reports, {"kind": "file", **entry, "path": entry["path"].format(**paths)})
    tuner = Tuner(reports, False, roots, io, FAST)
    tuner.recover()
    assert not victim.exists() and not victim.parent.exists(), "no file is ever created"
    assert io.writes == [] and snapshot(roots.sysfs, roots.procfs) == before
    (line,) = tuner.log.recovered
    assert line.startswith("refused to restore ") and why in line
    assert not (reports / RESTORE_FILE).exists(), "a refused entry is reported once"


def test_a_mangled_entry_is_reported_and_nothing_written(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, reports = host
    _journal(reports, {"kind": "file"})
    tuner = Tuner(reports, True, roots, io, FAST)
    tuner.recover()
    assert io.writes == []
    assert "lacks or mangles 'setting'" in tuner.log.recovered[0]


def test_a_journal_others_could_have_written_is_refused(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, reports = host
    _journal(reports, FileWrite("thp", roots.sysfs / THP, "madvise", "never").as_dict())
    (reports / RESTORE_FILE).chmod(0o644)
    with pytest.raises(TuneError, match=r"restore.json: not a private file of uid 0 \(mode 0644"):
        Tuner(reports, True, roots, io, FAST).recover()
    reports.chmod(0o770)
    with pytest.raises(TuneError, match=r"it is writable by others \(mode 0770\)"):
        Tuner(reports, True, roots, io, FAST).recover()
    assert io.writes == []


def test_the_system_io_never_creates_a_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        SystemIo().write(tmp_path / "missing", "1")
    assert not (tmp_path / "missing").exists()


def test_a_setting_that_cannot_be_restored_keeps_the_file(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, reports = host
    tuner = Tuner(reports, True, roots, io, FAST)
    tuner.start({})
    io.refuse.add(roots.sysfs / THP)
    tuner.restore()
    assert [line for line in tuner.log.failed if "transparent_hugepage" in line]
    assert (reports / RESTORE_FILE).exists(), "the next session tries again"
    assert any("could NOT restore" in line for line in tuner.summary_lines())


def test_a_mangled_restore_file_is_one_line(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, reports = host
    reports.mkdir(mode=0o700)
    write_private(reports / RESTORE_FILE, '{"changes": "nope"}')
    with pytest.raises(TuneError, match="not a restore file"):
        Tuner(reports, True, roots, io, FAST).recover()
