"""Ssh.lost: the master connection this process opened ended by itself (its host was lost)."""

from __future__ import annotations

from pathlib import Path

from pytest_ssd.machine.address import parse_address
from pytest_ssd.machine.ssh import Ssh
from pytest_ssd.proc.runner import spawn


def _with_master(tmp_path: Path, seconds: float) -> Ssh:
    """An Ssh whose "master" is a process that ends after *seconds*."""
    ssh = Ssh(parse_address("ssh://root@lab-07/dev/sdb"), tmp_path / "control")
    ssh._master = spawn(["sleep", str(seconds)], artifacts=tmp_path, name="master")
    return ssh


def test_a_running_master_is_not_lost_and_one_that_ended_is(tmp_path: Path) -> None:
    ssh = _with_master(tmp_path, 60)
    assert not ssh.lost(0.0)
    assert ssh._master is not None
    ssh._master.kill()
    assert ssh.lost(0.0)
    ssh.close()
    assert not ssh.lost(0.0)  # closed by this process: not lost


def test_a_master_that_is_ending_is_given_the_grace(tmp_path: Path) -> None:
    ssh = _with_master(tmp_path, 0.3)
    assert not ssh.lost(0.0)
    assert ssh.lost(5.0)
    ssh.close()


def test_a_connection_never_opened_is_not_lost(tmp_path: Path) -> None:
    assert not Ssh(parse_address("ssh://lab-07/dev/sdb"), tmp_path).lost(1.0)
