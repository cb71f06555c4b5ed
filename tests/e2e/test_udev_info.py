"""A block device as udev identifies it: pyudev on this machine, ``udevadm info`` on a test
host, the same answer for the same device (the local sshd is this machine)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_ssd.device.udev import info
from pytest_ssd.machine.machine import LOCAL, SshMachine
from tests.sshd import Sshd


def test_this_machine_and_a_test_host_read_udev_alike(
    loop_device: Callable[..., Path], server: Sshd, tmp_path: Path
) -> None:
    name = loop_device(size_mib=64).name
    here = info.read(LOCAL, [name, "vda", "nosuchdisk0"])
    assert set(here) <= {name, "vda"} and name in here, "a device it lacks is left out"
    ssh = server.client(tmp_path.name)
    ssh.open()
    try:
        there = info.read(SshMachine(ssh), [name, "vda", "nosuchdisk0"])
    finally:
        ssh.close()
    assert there == here
    # no udevd here (measured): the kernel's uevent only, a loop device has no controller
    assert here[name] == info.UdevInfo(None, None, None, (), None, database=False)
