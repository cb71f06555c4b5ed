"""A device on a test host: the facts, the lock and the identity read over SSH are those read here.

A real sshd on 127.0.0.1 (tests/sshd.py) reaches this very machine, so every
state a loop device is put in can be inspected both ways: the local view
(``/sys``, ``/proc`` and ``/dev`` read by Python) and the host's snapshot (one
``sh`` script over SSH, :mod:`pytest_ssd.machine.hostfacts`) must give the same
:class:`~pytest_ssd.device.guard.TargetFacts`, and so the same verdict.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_ssd.device import guard
from pytest_ssd.device.identity import identify, identify_on
from pytest_ssd.device.node import DeviceLock, canonical
from pytest_ssd.device.view import View
from pytest_ssd.errors import SafetyError, ToolError
from pytest_ssd.machine.address import parse_address
from pytest_ssd.machine.hostlocks import HostLocks
from pytest_ssd.machine.locks import HereLocks
from pytest_ssd.machine.machine import LOCAL, SshMachine
from pytest_ssd.machine.ssh import Ssh
from pytest_ssd.site import Sites
from tests.sshd import Sshd

LoopFactory = Callable[..., Path]


@pytest.fixture(scope="module")
def host(server: Sshd) -> Iterator[Ssh]:
    ssh = server.client(server.folder.parent.name)
    ssh.open()
    try:
        yield ssh
    finally:
        ssh.close()


def _tool(*argv: str | Path, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in argv], check=False, input=stdin, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _same_both_ways(host: Ssh, path: Path, reason: str | None) -> guard.TargetFacts:
    """Inspect *path* here and over SSH; the facts agree and the verdict contains *reason*."""
    local = guard.inspect(path, View.of(LOCAL, str(path)))
    remote = guard.inspect(path, view=View.of(SshMachine(host), str(path), write=True))
    assert remote == local
    refusal = guard.refusal(remote)
    if reason is None:
        assert refusal is None
    else:
        assert refusal is not None and reason in refusal
    return remote


@pytest.fixture
def child() -> Iterator[Callable[[list[str]], None]]:
    """Factory: start a program that holds a device open; killed at teardown."""
    started: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str]) -> None:
        started.append(subprocess.Popen(argv))

    yield start
    for proc in started:
        proc.kill()
        proc.wait(timeout=10)


def test_a_clean_device_and_a_file_agree(
    host: Ssh, loop_device: LoopFactory, tmp_path: Path
) -> None:
    _same_both_ways(host, loop_device(16), None)
    file = tmp_path / "data.bin"
    file.write_bytes(b"\0" * 65536)
    facts = _same_both_ways(host, file, None)
    assert facts.kind == "file"
    missing = _same_both_ways(host, tmp_path / "missing", "it does not exist")
    assert not missing.exists


def test_signatures_and_mounts_agree(host: Ssh, loop_device: LoopFactory, tmp_path: Path) -> None:
    dev = loop_device(16)
    _tool("mkfs.ext4", "-q", "-F", dev)
    assert _same_both_ways(host, dev, "ext4 signature").signatures == ("ext4",)
    point = tmp_path / "mnt"
    point.mkdir()
    _tool("mount", "-o", "ro", dev, point)
    try:
        facts = _same_both_ways(host, dev, f"mounted at {point}")
        assert facts.busy, "the exclusive open (wipefs --all --no-act there) found it busy"
    finally:
        _tool("umount", point)


def test_a_partition_table_agrees(host: Ssh, loop_device: LoopFactory) -> None:
    # the kernel here makes no partition devices (the NVMe guest's does): the label only
    dev = loop_device(16)
    _tool("sfdisk", "-q", "--no-reread", dev, stdin="label: gpt\n,,L\n")
    facts = _same_both_ways(host, dev, "signatures")
    assert {"gpt", "PMBR"} <= set(facts.signatures)


def test_a_stacked_loop_device_agrees_from_above_and_below(
    host: Ssh, loop_device: LoopFactory
) -> None:
    lower = loop_device(16)
    upper = Path(_tool("losetup", "--find", "--show", lower))
    try:
        facts = _same_both_ways(host, lower, f"it backs the loop device {upper}")
        assert facts.backs_loop == (upper.name,)
        above = _same_both_ways(host, upper, None)
        assert [f.path for f in above.built_on] == [str(lower)]
    finally:
        subprocess.run(["losetup", "-d", str(upper)], capture_output=True, timeout=60, check=False)


def test_openers_agree(
    host: Ssh, loop_device: LoopFactory, child: Callable[[list[str]], None]
) -> None:
    plain, exclusive = loop_device(16), loop_device(16)
    child(["sh", "-c", f"exec sleep 60 < {plain}"])
    hold = f"import os, time; os.open({str(exclusive)!r}, os.O_RDONLY | os.O_EXCL); time.sleep(60)"
    child([sys.executable, "-c", hold])
    for dev in (plain, exclusive):
        _tool("sh", "-c", f"for i in $(seq 50); do fuser -s {dev} && exit 0; sleep 0.1; done")
    facts = _same_both_ways(host, plain, "it is open in pid ")
    assert "sleep 60" in facts.openers[0] and not facts.busy
    facts = _same_both_ways(host, exclusive, "exclusive open failed")
    assert facts.busy and "os.O_EXCL" in facts.openers[0]


def test_a_symlink_becomes_the_same_kernel_node(
    host: Ssh, loop_device: LoopFactory, tmp_path: Path
) -> None:
    dev = loop_device(16)
    link = tmp_path / "by-path:pci-0000:00:04.0"
    link.symlink_to(dev)
    remote = canonical(link, View.of(SshMachine(host), str(link), write=False))
    assert remote == canonical(link, View.of(LOCAL, str(link))) == dev


def test_the_lock_on_a_host_is_the_flock_every_session_sees(
    host: Ssh, loop_device: LoopFactory, tmp_path: Path
) -> None:
    dev = loop_device(16)
    holder, other = HostLocks(host, tmp_path / "lock-1"), HostLocks(host, tmp_path / "lock-2")
    lock = DeviceLock(holder, str(dev))
    lock.acquire()
    try:
        assert lock.pid is not None
        with pytest.raises(SafetyError) as second:
            DeviceLock(other, str(dev)).acquire()
        assert f"it is locked by pid {lock.pid} ({_flock(dev)})" in str(second.value)
        with pytest.raises(SafetyError, match=f"locked by pid {lock.pid} "):
            DeviceLock(HereLocks(), str(dev)).acquire()  # the host is this machine: seen here
        held = View.of(SshMachine(host), str(dev), write=True)
        assert guard.inspect(dev, view=held).openers == (f"pid {lock.pid} ({_flock(dev)})",)
        ours = View.of(SshMachine(host), str(dev), write=True, ours=[lock.pid])
        assert guard.refusal(guard.inspect(dev, view=ours)) is None, "the session's own lock"
    finally:
        lock.release()
        holder.close()
        other.close()
    again = DeviceLock(HereLocks(), str(dev))
    again.acquire()
    again.release()


def _flock(dev: Path) -> str:
    """The lock's holder on the host (perl: lock and claim in one process)."""
    return f"pytest-ssd lock {dev}"


def test_a_lock_on_a_missing_node_creates_nothing(host: Ssh, tmp_path: Path) -> None:
    missing = tmp_path / "nvme9n9"
    with pytest.raises(SafetyError, match="it is not a block device or a file there"):
        DeviceLock(HostLocks(host, tmp_path / "lock"), str(missing)).acquire()
    assert not missing.exists(), "flock would have created a regular file"


def test_a_lock_ends_with_the_session_that_held_it(
    server: Sshd, loop_device: LoopFactory, tmp_path: Path
) -> None:
    dev = loop_device(16)
    control = Path(f"/tmp/ssd-ssh-{os.getpid()}-held")  # a socket path holds 107 bytes at most
    holder = textwrap.dedent(
        f"""
        from pathlib import Path
        from pytest_ssd.device.node import DeviceLock
        from pytest_ssd.machine.hostlocks import HostLocks
        from pytest_ssd.machine.address import parse_address
        from pytest_ssd.machine.ssh import Ssh
        ssh = Ssh(parse_address({server.url("/dev/null")!r}), Path({str(control)!r}),
                  config=Path({str(server.config)!r}))
        ssh.open()
        DeviceLock(HostLocks(ssh, Path({str(tmp_path / "held")!r})), {str(dev)!r}).acquire()
        print("held", flush=True)
        input()
        """
    )
    session = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert session.stdout is not None and session.stdout.readline() == "held\n"
    with pytest.raises(SafetyError, match="locked by pid"):
        DeviceLock(HereLocks(), str(dev)).acquire()
    session.kill()  # kill -9: nothing of the session runs its clean-up
    session.wait(timeout=10)
    shutil.rmtree(control, ignore_errors=True)  # what the killed session could not remove
    lock = DeviceLock(HereLocks(), str(dev))
    for _ in range(50):
        try:
            lock.acquire()
            break
        except SafetyError:
            time.sleep(0.1)
    else:
        pytest.fail("the host kept the lock of a session that was killed")
    lock.release()


def test_a_device_is_identified_as_here(host: Ssh, loop_device: LoopFactory) -> None:
    dev = loop_device(24)
    view = View.of(SshMachine(host), str(dev), write=False)
    node = view.stat(str(dev))
    assert node is not None
    block = view.block_of(node.rdev)
    assert block is not None
    remote = identify_on(SshMachine(host), str(dev), block.name)
    assert remote == identify(dev, LOCAL)
    assert remote.size_bytes == 24 << 20 and remote.backing_file and remote.direct_io


def test_a_hosts_devices_are_identified_whatever_their_paths_names_guess(
    server: Sshd, loop_device: LoopFactory, tmp_path: Path
) -> None:
    """The identities' copy is taken beside the guard's snapshot, of the block devices the
    paths' names guess; a path whose name guesses wrong (a link, one named for another
    device) is still identified as the device its node is, before and after the locks."""
    first, second = loop_device(24), loop_device(32)
    links = tmp_path / "links"
    links.mkdir()
    misleading = links / second.name  # names the other device
    misleading.symlink_to(first)
    plain = links / "disk-a"
    plain.symlink_to(second)
    sites = Sites()
    sites.machines.config = server.config
    site = sites.of(parse_address(server.url(str(first))))
    try:
        targets = {first: first, misleading: first, plain: second}
        looked = site.snapshots([str(t) for t in targets])
        held = site.views({str(t): None for t in targets})
        for views in (looked, held):
            for target, dev in targets.items():
                view = views[str(target)]
                assert canonical(target, view) == dev
                assert view.identified[str(dev)] == identify(dev, LOCAL)
    finally:
        assert sites.close() == []


def test_a_missing_tool_on_the_host_is_named_with_the_host(host: Ssh) -> None:
    machine = SshMachine(host)
    assert machine.which("sh", "").startswith("/")
    with pytest.raises(ToolError) as caught:
        machine.which("no-such-tool-ssd", "install it with 'apt-get install no-such-tool'")
    assert str(caught.value) == (
        f"no-such-tool-ssd is not installed on {host.where}:"
        " install it with 'apt-get install no-such-tool'"
    )


def test_several_files_are_read_in_one_round_trip_as_one_by_one(host: Ssh) -> None:
    """A host's files read together (a measurement's /proc/stat and CPU pressure) come back
    as each alone does: its text, or None where it cannot be read."""
    machine = SshMachine(host)
    paths = ["/proc/sys/kernel/ostype", "/nonexistent/file", "/proc/sys/kernel/osrelease"]
    assert machine.read_many(paths) == [machine.read(p) for p in paths]
    assert machine.read_many(paths) == [
        Path(paths[0]).read_text(),
        None,
        Path(paths[2]).read_text(),
    ]
    assert machine.read_many([]) == []
