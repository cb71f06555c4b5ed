"""fio's client/server on a test host: real fio --server over a real sshd on 127.0.0.1
(and over any machine that serves it: this one, its socket reached by a link).

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
from pytest_ssd.fio.runners import ChildFio, ClientFio, runner_on, runs_live
from pytest_ssd.fio.server import FioServer, FioServers
from pytest_ssd.machine.machine import LOCAL, LocalMachine, Machine, SshMachine
from pytest_ssd.machine.ssh import Ssh
from tests.fake_machine import HERE
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
        jobs, dev, artifacts=tmp_path / "there", runner=ClientFio(fio_host, fio_host.machine)
    )
    here = run_jobs(jobs, dev, artifacts=tmp_path / "here", runner=HERE)
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
            runner=ClientFio(fio_host, fio_host.machine),
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
                runner=ClientFio(fio_host, fio_host.machine),
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


class ServedHere(LocalMachine):
    """This machine as one fio is no child process on: its fio served, the server's socket
    reached through a link in *folder* (what a connection's forward gives)."""

    children = False

    def __init__(self, folder: Path) -> None:
        folder.mkdir(mode=0o700)
        self.folder = folder

    @property
    def sockets(self) -> Path:
        return self.folder

    def forward(self, here: Path, there: str) -> None:
        here.unlink(missing_ok=True)
        here.symlink_to(there)


def test_fios_server_runs_on_any_machine_that_serves_it(
    loop_device: LoopFactory, tmp_path: Path
) -> None:
    """The runner follows from what the machine offers, and the server is built over the
    machine alone: a machine that serves programs and forwards sockets, whatever reaches
    it, gets ``fio --client`` of its one server; a machine whose programs are this
    process's children gets fio as a child, its status live, and no server."""
    dev = loop_device(64)
    servers = FioServers()
    job = FioJob("w", "rnd", 4096, read_pct=0, size=8 * MIB, io_bytes=MIB, seed=3)
    here = runner_on(LOCAL, servers)
    assert isinstance(here, ChildFio) and here.live_status and runs_live(LOCAL)
    assert servers.close() == [], "no server started for this machine"
    served = ServedHere(tmp_path / "s")
    try:
        runner = runner_on(served, servers)
        assert isinstance(runner, ClientFio) and not runner.live_status and not runs_live(served)
        again = runner_on(served, servers)
        assert isinstance(again, ClientFio) and again.server is runner.server, "one a machine"
        done = run_jobs([job], dev, artifacts=tmp_path / "served", runner=runner)
        assert done.result(job).directions["write"].io_bytes == MIB
    finally:
        assert servers.close() == [], "the server left no fio behind"
    assert servers.close() == [], "closed once"
    assert not list((tmp_path / "s").glob("fio-*.sock")), "its socket went with it"
