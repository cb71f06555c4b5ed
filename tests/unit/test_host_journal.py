"""The restore journal: only the machine's own; only our settings, at our places, with values."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from pytest_ssd.host import RESTORE_FILE, Roots, TuneError, Tuner
from pytest_ssd.host.changes import FeatureWrite, FileWrite
from pytest_ssd.host.nvme_features import APST
from pytest_ssd.host.tune import LOCK_FILE
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.statedir import write_private
from tests.unit.host_fakes import KernelIo, nvme_node, snapshot
from tests.unit.test_host_settings import LOOP
from tests.unit.test_host_tune import NVME, THP, record, tuner, tuner_host

ASLR = "sys/kernel/randomize_va_space"
GOVERNOR = "devices/system/cpu/cpu1/cpufreq/scaling_governor"
APST_TABLE = "18640000000000001864000000000000" * 16  # 256 bytes


@pytest.fixture
def host(tmp_path: Path) -> tuple[Roots, KernelIo, Path]:
    return tuner_host(tmp_path)


def _journal(state: Path, *entries: dict[str, object], pid: int = 4242) -> Path:
    state.mkdir(mode=0o700, exist_ok=True)
    data = {"pid": pid, "started": "777", "changes": list(entries)}
    write_private(state / RESTORE_FILE, json.dumps(data))
    return state / RESTORE_FILE


def _leftover(state: Path, roots: Roots, pid: int) -> None:
    change = FileWrite("thp", Path("/sys") / THP, "madvise", "never")
    _journal(state, change.as_dict(), pid=pid)
    change.apply(KernelIo(root=roots.sysfs.parent))


def _recover(state: Path, roots: Roots, io: KernelIo) -> Tuner:
    recovered = tuner(state, False, roots, io)
    recovered.recover()
    return recovered


def test_a_leftover_of_a_dead_session_is_restored_first(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    _leftover(state, roots, 4242)  # nobody holds the lock: its session is gone
    assert (roots.sysfs / THP).read_text() == "always madvise [never]\n"
    tuned = _recover(state, roots, io)
    assert (roots.sysfs / THP).read_text() == "always [madvise] never\n"
    assert not (state / RESTORE_FILE).exists()
    assert tuned.log.recovered == [f"/sys/{THP}: madvise again (left by pid 4242)"]
    assert tuned.summary_lines() == [f"recovered: {tuned.log.recovered[0]}"]


def test_every_change_a_killed_session_made_is_accepted_back(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    before = snapshot(roots.sysfs, roots.procfs)
    by_id = dataclasses.replace(NVME, path="/dev/disk/by-id/nvme-M_S")
    killed = tuner(state, True, roots, io)
    killed.recover()
    record(killed, {"loop3": LOOP, "nvme0n1": by_id})
    assert len(killed.log.changed) == 7 and io.features[APST] == "get-feature-apst-off.txt"
    journal = json.loads((state / RESTORE_FILE).read_text())
    apst = next(c for c in journal["changes"] if c["setting"] == "apst")
    assert apst["device"] == "/dev/nvme0n1", "the kernel's node, not the name given"
    killed.release_lock()  # what the kernel does to a killed process's lock; nothing restored
    tuned = _recover(state, roots, io)
    assert snapshot(roots.sysfs, roots.procfs) == before
    assert io.features[APST] == "get-feature-apst.txt", "APST back on"
    assert io.sent[-1] == bytes.fromhex(apst["data"]), "with the controller's own table"
    assert len(tuned.log.recovered) == 7 and tuned.log.refused == []


def test_a_live_session_is_left_alone_and_blocks_tuning(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    _leftover(state, roots, os.getpid())
    lock = state / LOCK_FILE
    holder = subprocess.Popen(["flock", "-o", str(lock), "sleep", "30"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while str(holder.pid) not in Path("/proc/locks").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        _recover(state, roots, io)
        assert (roots.sysfs / THP).read_text() == "always madvise [never]\n", "not ours"
        with pytest.raises(TuneError) as info:
            tuner(state, True, roots, io).recover()
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
    assert str(info.value) == (
        f"pytest-ssd (pid {holder.pid} (flock -o {lock} sleep 30)) has tuned this machine and"
        f" is still running ({state / RESTORE_FILE}): let it finish before --ssd-tune"
    )


def _file(setting: str, path: str, original: str) -> dict[str, object]:
    return {
        "kind": "file",
        "setting": setting,
        "path": path,
        "original": original,
        "target": "never",
    }


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (_file("thp", "{victim}", "madvise"), "not a file --ssd-tune sets for 'thp'"),
        (_file("thp", "{existing}", "madvise"), "not a file --ssd-tune sets for 'thp'"),
        (_file("thp", "/etc/cron.d/pytest-ssd-x", "* * * * * root x"), "not a file --ssd-tune"),
        (_file("cron", "{victim}", "* * * * * root x"), "not a file --ssd-tune sets for 'cron'"),
        (
            _file("thp", "{sysfs}/kernel/mm/../mm/transparent_hugepage/enabled", "madvise"),
            "not a file --ssd-tune sets for 'thp'",
        ),
        (_file("thp", "{procfs}/" + ASLR, "2"), "not a file --ssd-tune sets for 'thp'"),
        (_file("aslr", "/proc/sys/kernel/core_pattern", "|/tmp/x"), "not a file --ssd-tune"),
        (
            _file("scheduler", "{sysfs}/class/block/sdz/queue/scheduler", "none"),
            "not a file --ssd-tune sets for 'scheduler'",
        ),
        (
            _file("thp", "{sysfs}/" + THP, "yes-please"),
            "not a value it takes (always madvise never)",
        ),
        (_file("aslr", "{procfs}/" + ASLR, "7"), "not a value it takes (0 1 2)"),
        (_file("aslr", "{procfs}/" + ASLR, "0\n1"), "not a value it takes (0 1 2)"),
        (
            _file("governor", "{sysfs}/" + GOVERNOR, "userspace"),
            "not a value it takes (performance powersave)",
        ),
        (
            _file("boost", "{sysfs}/devices/system/cpu/intel_pstate/no_turbo", "2"),
            "not a value it takes (0 1)",
        ),
        (
            _file("scheduler", "{sysfs}/class/block/loop3/queue/scheduler", "noop"),
            "not a value it takes (mq-deadline kyber bfq none)",
        ),
    ],
)
def test_a_file_entry_is_restored_only_to_its_own_path_and_values(
    host: tuple[Roots, KernelIo, Path], tmp_path: Path, entry: dict[str, str], why: str
) -> None:
    roots, io, state = host
    victim = tmp_path / "etc" / "cron.d" / "pwned"
    existing = tmp_path / "existing"
    existing.write_text("precious\n")
    where = {"victim": victim, "existing": existing, "sysfs": "/sys", "procfs": "/proc"}
    before = snapshot(roots.sysfs, roots.procfs)
    _journal(state, {**entry, "path": entry["path"].format(**where)})
    tuned = _recover(state, roots, io)
    assert not victim.exists() and not victim.parent.exists(), "no file is ever created"
    assert not Path("/etc/cron.d/pytest-ssd-x").exists()
    assert existing.read_text() == "precious\n"
    assert io.writes == [] and snapshot(roots.sysfs, roots.procfs) == before
    assert tuned.log.recovered == []
    (line,) = tuned.summary_lines()
    assert line.startswith(f"refused to restore: setting {entry['setting']!r}, value ")
    assert why in line and line.endswith(" (left by pid 4242)") and "\n" not in line
    assert not (state / RESTORE_FILE).exists(), "a refused entry is reported once"


def _apst(device: str, **changed: object) -> dict[str, object]:
    entry = FeatureWrite("apst", device, APST, 1, 0, APST_TABLE).as_dict()
    return {**entry, **changed}


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (_apst("{node}", feature=0x02), "not a feature --ssd-tune sets ('apst', 0x02)"),
        (_apst("{node}", setting="power"), "not a feature --ssd-tune sets ('power', 0x0c)"),
        (_apst("/etc/passwd"), "not an NVMe device node in {dev}"),
        (_apst("/dev/null"), "not an NVMe device node in {dev}"),
        (_apst("{dev}/../dev/nvme0n1"), "not an NVMe device node in {dev}"),
        (_apst("{dev}/nvme7n1"), "no such device here"),
        (_apst("{dev}/nvme0"), "not the kernel's nvme0 (see {sysfs}/class/nvme/nvme0/dev)"),
        (_apst("{dev}/nvme1n1"), "not the kernel's nvme1n1 (see {sysfs}/class/block/nvme1n1/dev)"),
        (_apst("{dev}/nvme2n1"), "not the kernel's nvme2n1 (see {sysfs}/class/block/nvme2n1/dev)"),
        (_apst("{node}", original=7), "not a value APST takes (0 or 1)"),
        (_apst("{node}", data="zz"), "its data buffer is not hex"),
        (_apst("{node}", data="00" * 300), "its data buffer is not an APST table (256 bytes)"),
    ],
)
def test_a_feature_entry_goes_only_to_the_kernels_nvme_node(
    host: tuple[Roots, KernelIo, Path], entry: dict[str, object], why: str
) -> None:
    roots, io, state = host
    (roots.dev / "nvme0").symlink_to(roots.dev / "nvme0n1")  # a link is not the kernel's node
    nvme_node(roots, "nvme1n1", minor=1)
    (roots.sysfs / "class/block/nvme1n1/dev").write_text("259:9\n")  # another device's number
    os.mknod(roots.dev / "nvme2n1", stat.S_IFCHR | 0o600, os.makedev(259, 2))  # not a block node
    (roots.sysfs / "class/block/nvme2n1").mkdir(parents=True)
    (roots.sysfs / "class/block/nvme2n1/dev").write_text("259:2\n")
    where = {"node": "/dev/nvme0n1", "dev": "/dev", "sysfs": "/sys"}
    _journal(state, {**entry, "device": str(entry["device"]).format(**where)})
    tuned = _recover(state, roots, io)
    assert io.nvme_calls == [], "nvme-cli never ran"
    (line,) = tuned.log.refused
    assert line.endswith(f": {why.format(**where)} (left by pid 4242)"), line


def test_a_mangled_entry_is_reported_and_nothing_written(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    _journal(state, {"kind": "file"}, {"kind": "shell", "setting": "x"})
    tuned = _recover(state, roots, io)
    assert io.writes == []
    assert tuned.log.refused == [
        "{'kind': 'file'}: lacks or mangles 'setting' (left by pid 4242)",
        "{'kind': 'shell', 'setting': 'x'}: kind 'shell' is not one --ssd-tune writes"
        " (left by pid 4242)",
    ]


def test_a_journal_in_the_report_folder_is_ignored(
    host: tuple[Roots, KernelIo, Path], tmp_path: Path
) -> None:
    roots, io, state = host
    reports = tmp_path / "reports"
    reports.mkdir()
    victim = tmp_path / "victim"
    planted = {
        "pid": 1,
        "changes": [
            FileWrite("thp", Path("/sys") / THP, "always", "").as_dict(),
            _file("thp", str(victim), "x"),
        ],
    }
    (reports / ".ssd-tune-restore.json").write_text(json.dumps(planted))
    tuned = _recover(state, roots, io)
    assert io.writes == [] and not victim.exists()
    assert tuned.summary_lines() == []


def test_a_journal_others_could_have_written_is_refused(
    host: tuple[Roots, KernelIo, Path],
) -> None:
    roots, io, state = host
    journal = _journal(state, FileWrite("thp", Path("/sys") / THP, "always", "never").as_dict())
    journal.chmod(0o644)
    with pytest.raises(TuneError) as info:
        tuner(state, False, roots, io).recover()
    assert str(info.value) == (
        f"this machine: cannot read its tune journal: {journal} is not private (mode 644):"
        " check and delete it"
    )
    journal.chmod(0o600)
    os.chown(journal, 65534, 65534)
    with pytest.raises(TuneError, match=r"restore.json is owned by uid 65534$"):
        tuner(state, False, roots, io).recover()
    os.chown(journal, 0, 0)
    state.chmod(0o770)
    for requested in (True, False):  # a journal that cannot be checked: refused, tuning or not
        with pytest.raises(
            TuneError, match=r"lock: refusing .*/state: it is writable by others \(mode 0770\)"
        ):
            tuner(state, requested, roots, io).recover()
    state.chmod(0o700)
    elsewhere = state.parent / "elsewhere.json"
    journal.replace(elsewhere)
    journal.symlink_to(elsewhere)
    with pytest.raises(TuneError, match=r"restore.json is not a file$"):
        tuner(state, False, roots, io).recover()
    assert io.writes == []


def test_a_mangled_journal_is_one_line(host: tuple[Roots, KernelIo, Path]) -> None:
    roots, io, state = host
    _journal(state).write_text('{"changes": "nope"}')
    with pytest.raises(TuneError, match="not a restore file"):
        tuner(state, True, roots, io).recover()


#: a kernel attribute written here in process (this machine's transport), and by the
#: script a test host runs (every machine's, run here)
WRITERS = {
    "in process": LOCAL.write_attribute,
    "by script": functools.partial(Machine.write_attribute, LOCAL),
}


@pytest.mark.parametrize("how", sorted(WRITERS))
def test_a_machine_writes_only_existing_kernel_attributes(tmp_path: Path, how: str) -> None:
    write = WRITERS[how]
    outside = tmp_path / "precious"
    outside.write_text("keep\n")
    aslr = tmp_path / "aslr"
    aslr.symlink_to("/proc/sys/kernel/randomize_va_space")
    before = Path("/proc/sys/kernel/randomize_va_space").read_text()
    for path in (
        outside,
        Path("/proc/self/root") / outside.relative_to("/"),
        Path("/proc/../") / outside.relative_to("/"),
        aslr,  # a link to an attribute is not one: it could be swapped
        Path("/sys/kernel/pytest-ssd-missing"),
    ):
        with pytest.raises(OSError):
            write(str(path), "1")
    assert outside.read_text() == "keep\n"
    assert not Path("/sys/kernel/pytest-ssd-missing").exists(), "never created"
    assert Path("/proc/sys/kernel/randomize_va_space").read_text() == before
