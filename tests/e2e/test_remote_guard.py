"""The guard on a test host: the facts read over SSH are the facts read here.

A real sshd on 127.0.0.1 (tests/sshd.py) reaches this very machine, so every
state a loop device is put in can be inspected both ways: the local view
(``/sys``, ``/proc`` and ``/dev`` read by Python) and the host's snapshot (one
``sh`` script over SSH, :mod:`pytest_ssd.device.remote`) must give the same
:class:`~pytest_ssd.device.guard.TargetFacts`, and so the same verdict.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_ssd.device import guard
from pytest_ssd.device.node import canonical
from pytest_ssd.device.remote import SshView
from pytest_ssd.machine.ssh import Ssh
from tests.sshd import local_sshd

LoopFactory = Callable[..., Path]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ssh]:
    folder = tmp_path_factory.mktemp("sshd")
    with local_sshd(folder) as server:
        ssh = server.client(folder.name)
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
    local = guard.inspect(path)
    remote = guard.inspect(path, view=SshView.snapshot(host, str(path), write=True))
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
    remote = canonical(link, SshView.snapshot(host, str(link), write=False))
    assert remote == canonical(link) == dev
