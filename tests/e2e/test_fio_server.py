"""fio's client/server on a test host: real fio --server over a real sshd on 127.0.0.1.

The host is this machine, so the same loop device is measured both ways: fio run
here and fio run there through ``fio --client`` must do the same I/O, and the
server must leave no fio behind whatever ends it.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_ssd.errors import FioError
from pytest_ssd.fio.engine import run_jobs
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.runners import HostFio
from pytest_ssd.fio.server import FioServer
from pytest_ssd.machine.machine import Machine, SshMachine
from pytest_ssd.machine.ssh import Ssh
from tests.sshd import Sshd, local_sshd

LoopFactory = Callable[..., Path]
MIB = 1 << 20


@pytest.fixture
def fio_host(server: Sshd, tmp_path: Path) -> Iterator[FioServer]:
    ssh = server.client(tmp_path.name)
    ssh.open()
    fio = FioServer(SshMachine(ssh), tmp_path / "server")
    try:
        fio.start()
        yield fio
    finally:
        fio.stop()
        ssh.close()


def _host_folder_gone(machine: Machine | Ssh, folder: str) -> bool:
    return machine.run(["test", "-e", folder], timeout=30).returncode != 0


def test_jobs_on_the_host_do_what_they_do_here(
    fio_host: FioServer, loop_device: LoopFactory, tmp_path: Path
) -> None:
    dev = loop_device(64)
    jobs = [
        FioJob("w", "rnd", 4096, iodepth=4, read_pct=0, size=8 * MIB, io_bytes=4 * MIB, seed=7),
        FioJob("r", "rnd", 4096, iodepth=4, size=8 * MIB, io_bytes=4 * MIB, seed=7, io_log=True),
    ]
    there = run_jobs(
        jobs, dev, artifacts=tmp_path / "there", runner=HostFio(fio_host, fio_host.machine)
    )
    here = run_jobs(jobs, dev, artifacts=tmp_path / "here")
    for job in jobs:
        remote, local = there.result(job), here.result(job)
        assert remote.directions.keys() == local.directions.keys()
        for direction, done in local.directions.items():
            assert remote.directions[direction].io_bytes == done.io_bytes == 4 * MIB
            assert remote.directions[direction].total_ios == done.total_ios == 1024
    logs = sorted(p.name for p in (tmp_path / "there").glob("*.log"))
    assert logs == sorted(p.name for p in (tmp_path / "here").glob("*.log")) != []
    for log in (tmp_path / "there").glob("*.log"):
        lines = len(log.read_text().splitlines())
        assert lines == len((tmp_path / "here" / log.name).read_text().splitlines()) == 1024
    assert not (tmp_path / "there" / "fio.sock").exists()


def test_a_read_only_session_cannot_write_on_the_host(
    fio_host: FioServer, loop_device: LoopFactory, tmp_path: Path
) -> None:
    dev = loop_device(16)
    before = dev.read_bytes()[: 4 * MIB]
    job = FioJob("w", "seq", 65536, read_pct=0, size=4 * MIB)
    with pytest.raises(FioError, match=r"did not run on .*but fio is in read-only mode"):
        run_jobs(
            [job],
            dev,
            artifacts=tmp_path / "ro",
            readonly=True,
            runner=HostFio(fio_host, fio_host.machine),
        )
    assert dev.read_bytes()[: 4 * MIB] == before


def test_stopping_the_server_ends_its_running_jobs(
    fio_host: FioServer, loop_device: LoopFactory, tmp_path: Path
) -> None:
    dev = loop_device(16)
    job = FioJob("long", "rnd", 4096, size=8 * MIB, runtime_s=60)
    failed: list[BaseException] = []

    def measure() -> None:
        try:
            run_jobs(
                [job],
                dev,
                artifacts=tmp_path / "long",
                runner=HostFio(fio_host, fio_host.machine),
            )
        except BaseException as exc:  # noqa: BLE001  # handed to the test
            failed.append(exc)

    worker = threading.Thread(target=measure)
    worker.start()
    deadline = time.monotonic() + 30
    while len(fio_host.leftovers()) < 3 and time.monotonic() < deadline:  # server, backend, job
        time.sleep(0.2)
    assert len(fio_host.leftovers()) >= 3
    folder = fio_host.folder
    assert folder is not None
    fio_host.stop()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert fio_host.leftovers() == [], "no fio of that server is left on the host"
    assert _host_folder_gone(fio_host.machine, folder)
    assert failed and isinstance(failed[0], FioError), failed
    assert "the fio server was lost" in str(failed[0])


def test_a_lost_connection_ends_the_server(server: Sshd, tmp_path: Path) -> None:
    ssh = server.client(tmp_path.name)
    ssh.open()
    fio = FioServer(SshMachine(ssh), tmp_path / "server")
    fio.start()
    folder = fio.folder
    assert folder is not None and fio.leftovers() != []
    ssh.close()  # the master connection goes, with every channel over it
    again = server.client(tmp_path.name + "2")
    again.open()
    try:
        left = FioServer(SshMachine(again), tmp_path / "again", folder=folder)
        deadline = time.monotonic() + 20
        while left.leftovers() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left.leftovers() == []
        assert _host_folder_gone(again, folder)
        with pytest.raises(FioError, match="not running"):
            fio.client_args(tmp_path)
    finally:
        fio.stop()
        again.close()


def test_a_host_without_fio_is_one_line(tmp_path: Path) -> None:
    # the host's commands find sh and coreutils, not fio
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "mktemp", "grep", "sed", "cat", "sleep", "setsid", "rm"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    with local_sshd(tmp_path / "sshd", path=str(bin_dir)) as host:
        ssh = host.client(tmp_path.name)
        ssh.open()
        try:
            with pytest.raises(FioError) as caught:
                FioServer(SshMachine(ssh), tmp_path / "server").start()
        finally:
            ssh.close()
        left = host.settled()
    message = str(caught.value)
    assert message.endswith("fio --server did not start: fio is not installed on the host")
    assert left == [], "nothing was left on the host"
    assert "\n" not in message
