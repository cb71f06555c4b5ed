"""A test host's settings, read in one shell command there and recorded like this machine's.

The script runs here through :data:`LOCAL` (the same ``sh -c`` a host runs over SSH), so
this machine read through a copy must give what reading it directly gives.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity, identify
from pytest_ssd.host import HostRecord, Roots
from pytest_ssd.host.changes import FeatureWrite
from pytest_ssd.host.io import MachineIo, TuneError
from pytest_ssd.host.journal import checked
from pytest_ssd.host.record import device_settings, side_by_side
from pytest_ssd.host.settings import host_settings
from pytest_ssd.host.tree import PREFIX, copy_tree, read_host, scratch
from pytest_ssd.host.tune import checked_on
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.machine.snapshot import OUTSIDE
from pytest_ssd.machine.ssh import MARK
from tests.fake_machine import FakeMachine

#: readings that move between two reads (a clock, free memory, other processes)
MOVING = {"cpu-frequency", "memory", "busy-processes"}


def _disk() -> Path:
    """A block device of this machine (its root file system's disk, or any)."""
    found = sorted(Path("/sys/block").iterdir())
    if not found:
        pytest.skip("no block device in /sys/block")
    return Path("/dev") / found[0].name


def test_this_machine_read_as_a_host_reads_as_itself() -> None:
    dev = _disk()
    devices = {"dut": identify(dev, LOCAL)}
    roots, io = Roots(), MachineIo(LOCAL)
    direct = HostRecord.read(
        roots, io, [*host_settings(roots), *device_settings(roots, io, devices)], devices
    )
    remote = read_host(FakeMachine("lab7", here=True), devices, busy_sample_s=0.2)
    assert [r.key for r in remote] == [r.key for r in direct.readings]
    for mine, theirs in zip(direct.readings, remote, strict=True):
        assert theirs.host == "lab7" and theirs.source.endswith(" on lab7")
        assert "/ssd-copy-" not in theirs.source, "the copy's path never shows"
        if mine.key not in MOVING:
            assert (theirs.value, theirs.recommended, theirs.device) == (
                mine.value,
                mine.recommended,
                mine.device,
            ), mine.key
            assert theirs.source == f"{mine.source} on lab7"
    by_key = {r.key: r for r in remote}
    assert by_key["memory"].value and "total" in by_key["memory"].value
    assert by_key["busy-processes"].value is not None
    assert by_key["thp"].name == "Transparent huge pages (host lab7)"
    assert by_key["scheduler"].name == "I/O scheduler (dut)"


def identify_like(name: str) -> dict[str, DeviceIdentity]:
    """A SATA disk's identity as a host reports it (only what the settings read)."""
    found = DeviceIdentity(
        f"/dev/{name}", "block", name, 1 << 30, 512, 512, False, True, "M", "S", "F", "sata"
    )
    return {"dut": found}


def test_busy_processes_on_a_host_leave_out_the_reading_itself(tmp_path: Path) -> None:
    me = 4242
    text = "\n".join(
        [
            f"{MARK}pid {me}",
            f"{MARK}ticks 100",
            f"{MARK}sample 1",
            "/proc/7/stat:7 (stress) R 1 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0",
            f"/proc/{me + 1}/stat:{me + 1} (grep) R {me} 0 0 0 -1 0 0 0 0 0 0 0 0 0",
            f"{MARK}sample 2",
            "/proc/7/stat:7 (stress: a b) R 1 0 0 0 -1 0 0 0 0 0 50 0 0 0 20 0 1 0 100 0 0",
            f"/proc/{me + 1}/stat:{me + 1} (grep) R {me} 0 0 0 -1 0 0 0 0 0 50 0 0 0",
            "/sys/kernel/mm/transparent_hugepage/enabled:always madvise [never]",
            "/sys/block/sda/queue/scheduler:none [mq-deadline]",
            "/sys/block/sda/sda1/partition:1",
        ]
    )
    tree = copy_tree(text, tmp_path)
    now, sample, found = tree.now, tree.sample, tree.marks
    assert found["pid"] == str(me) and found["ticks"] == "100"
    # a partition's scheduler is its disk's, found as settings.scheduler finds it here
    disk_id = identify_like("sda1")
    (setting,) = [
        s
        for s in device_settings(now, MachineIo(FakeMachine("x", here=True)), disk_id)
        if s.key == "scheduler"
    ]
    assert setting.read().value == "mq-deadline"
    (path,) = setting.paths  # type: ignore[union-attr]
    assert tree.host_path(path) == Path("/sys/block/sda/queue/scheduler")
    assert (sample.procfs / "7/stat").read_text().startswith("7 (stress)")
    assert (now.procfs / "7/stat").read_text().startswith("7 (stress: a b)")
    thp = now.sysfs / "kernel/mm/transparent_hugepage/enabled"
    assert thp.read_text() == "always madvise [never]\n"


def test_a_path_out_of_the_copy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TuneError, match="odd path"):
        copy_tree("/sys/block/../queue/scheduler:[none]", tmp_path / "copy")
    assert not (tmp_path / "etc").exists()


def test_a_host_writes_only_its_kernel_attributes_and_says_which_host() -> None:
    with pytest.raises(
        OSError, match=r"^.*/etc/hostname is .*not in /sys or /proc on ssh root@lab7"
    ):
        MachineIo(FakeMachine("lab7", here=True)).write(Path("/etc/hostname"), "pwned")


def test_host_readings_are_rows_of_their_own_beside_this_machines() -> None:
    devices = {"dut": identify(_disk(), LOCAL)}
    here = HostRecord.read(
        Roots(), MachineIo(LOCAL), host_settings(Roots()), {}, busy_sample_s=0.05
    )
    there = read_host(FakeMachine("lab7", here=True), devices, busy_sample_s=0.05)
    env = HostRecord((*here.readings, *there)).as_dict()
    names = [name for name, _ in side_by_side([env])]
    assert "Transparent huge pages" in names and "Transparent huge pages (host lab7)" in names


class FakeNvme(FakeMachine):
    """This machine as a host whose ``nvme`` records its arguments and its data buffer."""

    def __init__(self, folder: Path) -> None:
        super().__init__("lab7", here=True)
        self.script = folder / "nvme"
        self.script.write_text(
            "#!/bin/sh\n"
            f'printf "%s\\n" "$@" > {folder}/args\n'
            'for a; do case $a in --data=*) f=${a#--data=}; cp "$f" '
            f'{folder}/data; echo "$f" > {folder}/path ;; esac; done\n'
        )
        self.script.chmod(0o755)

    def which(self, program: str, install_hint: str) -> str:
        return str(self.script)


def test_set_feature_on_a_host_sends_its_data_buffer_along(tmp_path: Path) -> None:
    table = bytes(range(256))  # NUL, '%' and '\\' among them
    change = FeatureWrite("apst", "/dev/nvme0n1", 0x0C, 1, 0, table.hex())
    host = FakeNvme(tmp_path)
    change.apply(MachineIo(host))
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:4] == ["set-feature", "/dev/nvme0n1", "--feature-id=12", "--value=0"]
    assert args[4] == "--data-len=256" and args[5].startswith("--data=/")
    assert (tmp_path / "data").read_bytes() == table, "byte for byte on the host"
    sent = Path((tmp_path / "path").read_text().strip())
    assert not sent.exists(), "the host's temporary copy is removed"


NODES = f"""{MARK}pid 1
{MARK}stat /dev/nvme0n1 61b0 103 0
{MARK}stat /dev/nvme0 2180 f1 0
/sys/block/nvme0n1/dev:259:0
/sys/class/nvme/nvme0/dev:241:0
"""


def test_an_apst_entry_of_a_dead_session_is_checked_against_the_hosts_node(
    tmp_path: Path,
) -> None:
    tree = copy_tree(NODES, tmp_path)
    entry = {
        "kind": "nvme-feature",
        "setting": "apst",
        "feature": 12,
        "original": 1,
        "target": 0,
        "data": "",
    }
    good, refused = checked([{**entry, "device": "/dev/nvme0n1"}], tree.now, tree.node_of)
    assert [c.device for c in good] == ["/dev/nvme0n1"] and not refused  # type: ignore[union-attr]
    good, refused = checked([{**entry, "device": "/dev/nvme0"}], tree.now, tree.node_of)
    assert len(good) == 1 and not refused, "the controller's character device"
    wrong = copy_tree(NODES.replace("259:0", "259:1"), tmp_path / "wrong")
    good, refused = checked([{**entry, "device": "/dev/nvme0n1"}], wrong.now, wrong.node_of)
    assert not good and "not the kernel's nvme0n1" in refused[0]
    good, refused = checked([{**entry, "device": "/dev/nvme1n1"}], tree.now, tree.node_of)
    assert not good and "no such device here" in refused[0]


THP = "/sys/kernel/mm/transparent_hugepage/enabled"


def _entry(setting: str, path: str, original: str) -> dict[str, object]:
    return {"kind": "file", "setting": setting, "path": path, "original": original, "target": "0"}


@pytest.mark.parametrize("path", ["/etc/hostname", "/sys/../etc/hostname", "/sample/proc/1/stat"])
def test_a_dead_sessions_entry_the_copy_cannot_hold_is_refused_naming_the_hosts_path(
    tmp_path: Path, path: str
) -> None:
    """The copy's own rules place a journal's path: one outside /sys and /proc is absent
    there (never a file outside the copy, nor the copy's first sample), so it is refused."""
    root = tmp_path / "copy"
    tree = copy_tree(f"{MARK}pid 1\n{THP}:always madvise [never]\n", root)
    (root / "sample" / "proc" / "1").mkdir(parents=True)
    (root / "sample" / "proc" / "1" / "stat").write_text("1 (init)\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "hostname").write_text("x\n")
    back, said = checked_on(tree, [_entry("thp", THP, "always"), _entry("aslr", path, "x")])
    assert [c.path for c in back] == [Path(THP)], "the good entry, at the host's path"  # type: ignore[union-attr]
    assert len(said) == 1 and said[0].startswith(f"setting 'aslr', value 'x', at '{path}'")
    assert str(tmp_path) not in said[0]
    assert tree.read_path(path).is_relative_to(root / OUTSIDE)
    assert not tree.read_path(path).exists()


def test_a_dead_sessions_copy_is_removed_by_the_next_and_no_other(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    assert dead.wait() == 0
    left = tmp_path / f"{PREFIX}{dead.pid}-x1"  # a session killed while its copy was open
    (left / "now" / "proc" / "1").mkdir(parents=True)
    (left / "now" / "proc" / "1" / "stat").write_text("1 (init) S 0")
    alive = tmp_path / f"{PREFIX}{os.getppid()}-x2"  # a running session's
    alive.mkdir()
    unnamed = tmp_path / f"{PREFIX}abcdefgh"  # not named by a pid: not ours to judge
    unnamed.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    linked = tmp_path / f"{PREFIX}{dead.pid}-x3"  # a link is never followed nor removed
    linked.symlink_to(target)
    with scratch(tmp_path) as made:
        assert Path(made).name.startswith(f"{PREFIX}{os.getpid()}-")
        assert not left.exists()
        assert alive.is_dir() and unnamed.is_dir() and linked.is_symlink() and target.is_dir()
    assert not Path(made).exists(), "its own copy removed on exit"
