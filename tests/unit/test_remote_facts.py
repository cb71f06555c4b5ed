"""A test host's facts: what cannot be read refuses (pytest_ssd.machine.hostfacts, machine.ssh)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_ssd.device.node import DeviceLock
from pytest_ssd.device.view import View
from pytest_ssd.errors import DeviceError, ToolError
from pytest_ssd.machine import hostfacts, hostlocks
from pytest_ssd.machine.address import parse_address
from pytest_ssd.machine.facts import HereFacts
from pytest_ssd.machine.hostfacts import HostFacts, sections
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.machine.ssh import (
    MARK,
    MISSING,
    check_missing,
    control_folder,
    resolve,
    ssh_path,
)
from pytest_ssd.proc.runner import Completed
from tests.fake_machine import FakeMachine


def test_a_missing_program_is_one_line_naming_its_package() -> None:
    done = Completed(("sh",), MISSING, f"{MARK}missing find\n", "", 0.1)
    with pytest.raises(ToolError) as caught:
        check_missing(done, "ssh lab-07")
    assert str(caught.value) == (
        "find is not installed on ssh lab-07: install findutils (apt-get install findutils)"
    )
    check_missing(Completed(("nvme",), MISSING, "", "", 0.1), "ssh lab-07")  # no mark: its own


def _holding(text: str) -> set[int]:
    host = SimpleNamespace(where="ssh lab-07")
    facts = HostFacts(machine=host, target="/dev/sdb", write=True)  # type: ignore[arg-type]
    return facts._holding(sections(text), {os.makedev(8, 16)}, set())


def test_descriptors_count_only_when_the_scripts_own_are_listed() -> None:
    sdb = "6000 8 10 5 100 /proc/77/fd/3"  # a block device, 8:16 (hex), held by pid 77
    own = "1180 0 0 13 7 /proc/42/fd/0"
    assert _holding(f"{MARK}fds 42\n{own}\n{sdb}\n") == {77}
    # an empty or hidden /proc lists nothing, not even the script: not "nobody holds it"
    for text in (f"{MARK}fds 42\n{sdb}\n", f"{MARK}fds 42\n", ""):
        with pytest.raises(DeviceError, match=r"cannot read the open files in /proc/\*/fd there"):
            _holding(text)


def test_control_sockets_live_in_a_short_plain_folder_whatever_tmpdir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / ("a b %h " + "x" * 100)))
    for runtime in (str(tmp_path / "with blank"), "/run/" + "r" * 60, ""):
        monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
        folder = control_folder()
        try:
            assert folder.parent == Path("/tmp") and len(str(folder)) < 30
            assert folder.stat().st_mode & 0o777 == 0o700
        finally:
            folder.rmdir()
    assert ssh_path(Path("/run/user/0/a%hb")) == "/run/user/0/a%%hb"


def test_one_host_named_two_ways_resolves_to_one_key(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host lab-07\n  User root\n  HostName 10.0.0.7\n  Port 2222\n")
    named = [
        resolve(parse_address(url), config)
        for url in ("ssh://lab-07/dev/sdb", "ssh://root@10.0.0.7:2222/dev/sdb")
    ]
    assert named == ["root@10.0.0.7:2222"] * 2
    other = resolve(parse_address("ssh://operator@lab-07/dev/sdb"), config)
    assert other == "operator@10.0.0.7:2222"


@dataclass
class _SlowHost(FakeMachine):
    """A host whose lock never answers; /proc/locks there names *holders* on the node."""

    holders: list[int] = field(default_factory=list)

    def hold(self, argv: list[str], **_: object) -> Completed:
        return Completed(tuple(argv), -15, "", "", 30.0)

    def run(self, argv: Sequence[str], **_: Any) -> Completed:
        if argv[-1] == "/dev/sdb":  # who holds it: the node's inode and the host's locks
            locks = [
                f"{n}: FLOCK  ADVISORY  WRITE {p} 00:05:18 0 EOF"
                for n, p in enumerate(self.holders)
            ]
            text = f"{MARK}inode\n5 18\n{MARK}locks\n" + "\n".join(locks)
        else:
            text = "".join(f"{MARK}pid {p}\nflock /dev/sdb sleep 1d\n" for p in argv[4:])
        return Completed(tuple(argv), 0, text, "", 0.1)


@pytest.mark.parametrize(
    ("holders", "why"),
    [
        ([], "nobody holds it there: the host is slow to answer"),
        ([4242], "held by pid 4242 (flock /dev/sdb sleep 1d)"),
    ],
)
def test_a_lock_that_does_not_come_says_it_timed_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, holders: list[int], why: str
) -> None:
    monkeypatch.setattr(hostlocks, "ACQUIRE_TIMEOUT_S", 0.0)
    host = _SlowHost("lab-07", holders=holders)
    lock = DeviceLock(hostlocks.HostLocks(host, tmp_path), "/dev/sdb")  # type: ignore[arg-type]
    with pytest.raises(DeviceError) as caught:
        lock.acquire()
    assert str(caught.value) == (
        f"timed out waiting for the lock on /dev/sdb on ssh root@lab-07 after 0 s ({why})"
    )


def test_the_snapshot_script_reads_this_machine_as_it_is_read_in_place() -> None:
    """One view over either look: the host's script run here gives the in-place facts."""
    target = "/dev/null"
    (script,) = hostfacts.snapshots(LOCAL, {target: ()}, write=False).values()
    here = HereFacts()
    assert script.stat(target) == here.stat(target) is not None
    assert script.realpath(target) == here.realpath(target)
    assert script.blocks() == here.blocks()
    assert script.swaps() == here.swaps()
    assert View(script).kernel_node(os.makedev(1, 3)) is None  # not a block device
    for name, block in here.blocks().items():
        node = View(HereFacts()).kernel_node(block.dev)
        assert View(script).kernel_node(block.dev) == node, name
