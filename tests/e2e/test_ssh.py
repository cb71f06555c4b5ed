"""The SSH connection to a test host, against a real sshd on 127.0.0.1 (tests/sshd.py)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ssd.errors import DeviceError
from pytest_ssd.machine.ssh import Ssh
from pytest_ssd.proc.runner import Completed
from tests.sshd import Sshd, local_sshd


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    with local_sshd(tmp_path / "sshd") as server:
        yield server


def _ssh(sshd: Sshd, tmp_path: Path, url: str | None = None) -> Ssh:
    return sshd.client(tmp_path.name, url)


def _ssh_processes(control: Path) -> list[str]:
    found = subprocess.run(
        ["pgrep", "-af", str(control)], check=False, capture_output=True, text=True, timeout=30
    )
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


def test_commands_run_on_the_host_over_one_master_connection(sshd: Sshd, tmp_path: Path) -> None:
    ssh = _ssh(sshd, tmp_path)
    ssh.open()
    try:
        assert ssh.alive
        done = ssh.run(["sh", "-c", 'echo "$1"; exit 3', "sh", "a b; $(c)"], timeout=30)
        assert (done.returncode, done.stdout) == (3, "a b; $(c)\n"), "quoted for the remote shell"
        for _ in range(5):  # (their cost: tests/benchmarks/remote.py, not a timed test)
            assert ssh.run(["true"], timeout=30).returncode == 0
        logins = (sshd.folder / "sshd.log").read_text().count("Accepted publickey")
        assert logins == 1, "every command went over the master connection"
    finally:
        ssh.close()
    assert not ssh.alive
    assert _ssh_processes(ssh.control_dir) == [], "no ssh is left running"


def test_an_unreachable_host_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    with local_sshd(tmp_path / "sshd") as server:
        port = server.port
    ssh = _ssh(server, tmp_path, f"ssh://root@127.0.0.1:{port}/dev/null")
    with pytest.raises(DeviceError) as caught:
        ssh.open()
    message = str(caught.value)
    assert message.startswith(f"ssh root@127.0.0.1 port {port}: ")
    assert "Connection refused" in message and "\n" not in message


def test_a_host_that_refuses_the_key_fails_without_a_prompt(sshd: Sshd, tmp_path: Path) -> None:
    (sshd.folder / "authorized_keys").write_text("")
    ssh = _ssh(sshd, tmp_path)
    start = time.monotonic()
    with pytest.raises(DeviceError, match="Permission denied"):
        ssh.open()
    assert time.monotonic() - start < 15, "BatchMode: no password prompt waits"


def test_a_channel_the_master_refuses_is_one_line_not_a_second_login(tmp_path: Path) -> None:
    with local_sshd(tmp_path / "sshd", max_sessions=1) as server:
        ssh = _ssh(server, tmp_path)
        ssh.open()
        try:
            held = ssh.hold(
                ["sh", "-c", 'echo "@@ssd:ready"; exec cat'],
                artifacts=tmp_path / "held",
                name="held",
                ready="ready",
                timeout=30,
            )
            with pytest.raises(DeviceError) as caught:
                ssh.run(["true"], timeout=30)
            assert str(caught.value) == (
                f"{ssh.where}: the master connection refused a channel for true (sshd's"
                " MaxSessions); pytest-ssd opens no second login"
            )
            assert server.logins() == 1, "ssh did not log in a second time on its own"
            assert not isinstance(held, Completed) and held.alive
        finally:
            ssh.close()
