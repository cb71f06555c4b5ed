"""The session's test hosts: one SSH connection each, the locks and fio servers held there.

A ``--dut=ssh://[user@]host[:port]/dev/...`` device is reached through a
:class:`TestHost`: its connection (:class:`~pytest_ssd.machine.ssh.Ssh`, opened
once per process), the device locks the controller holds there for the session
(:class:`~pytest_ssd.device.remote_lock.RemoteLock`, all in one process on one
channel: :class:`~pytest_ssd.device.remote_lock.HostLocks`), and the fio server the
process running the tests starts there on first use
(:class:`~pytest_ssd.fio.server.FioServer`).  :meth:`Hosts.close` stops the
servers, checks that no fio of theirs is left on any host, releases the locks
and closes the connections; it says what it found left behind.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.device.remote import SshView
from pytest_ssd.device.remote_lock import HostLocks, RemoteLock
from pytest_ssd.errors import SsdError
from pytest_ssd.fio.server import FioServer
from pytest_ssd.machine.address import SshAddress
from pytest_ssd.machine.machine import SshMachine
from pytest_ssd.machine.ssh import Ssh, control_folder, resolve


@dataclass
class TestHost:
    """One test host of the session, in this process."""

    __test__ = False  # not a test class, whatever pytest collects

    ssh: Ssh
    machine: SshMachine
    #: the one process there that holds every lock and claim below
    holder: HostLocks
    locks: list[RemoteLock] = field(default_factory=list)
    fio: FioServer | None = None


@dataclass
class Hosts:
    """The test hosts of this process, connected on first use."""

    #: an ssh_config to use instead of ``~/.ssh/config`` (``--ssd-ssh-config``)
    config: Path | None = None
    hosts: dict[str, TestHost] = field(default_factory=dict)
    _keys: dict[SshAddress, str] = field(default_factory=dict, repr=False)
    _folder: Path | None = None
    #: devices are prepared in threads: one connection per host all the same
    _connecting: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def key(self, address: SshAddress) -> str:
        """One connection per user, host and port as ssh resolves them (``ssh -G``)."""
        if address not in self._keys:
            self._keys[address] = resolve(address, self.config)
        return self._keys[address]

    def _control_dir(self, index: int) -> Path:
        if self._folder is None:
            # short and plain, whatever TMPDIR is: a unix socket's path holds 107 bytes
            self._folder = control_folder()
        return self._folder / str(index)

    def host(self, address: SshAddress) -> TestHost:
        """The host of *address*, connected (a one-line :class:`DeviceError` when unreachable)."""
        with self._connecting:
            key = self.key(address)
            if key not in self.hosts:
                ssh = Ssh(address, self._control_dir(len(self.hosts)), config=self.config)
                ssh.open()
                holder = HostLocks(ssh, ssh.control_dir / "locks")
                self.hosts[key] = TestHost(ssh, SshMachine(ssh), holder)
            return self.hosts[key]

    def lock(self, address: SshAddress, node: str) -> int:
        """Lock *node* on the host for the session; the pid holding the lock there."""
        host = self.host(address)
        lock = RemoteLock(host.ssh, node, host.holder.artifacts, host=host.holder)
        lock.acquire()
        with self._connecting:
            host.locks.append(lock)
        return int(lock.pid or 0)

    def claim(self, address: SshAddress, node: str) -> None:
        """Claim *node*, locked on the host, for writing (``O_EXCL`` in the lock's process)."""
        host = self.host(address)
        next(lock for lock in host.locks if lock.node == node).claim()

    def view(
        self,
        address: SshAddress,
        path: str,
        *,
        write: bool,
        ours: tuple[int, ...] = (),
        claimed: frozenset[int] = frozenset(),
    ) -> SshView:
        """The host's facts about *path* now (one snapshot)."""
        ssh = self.host(address).ssh
        return SshView.snapshot(ssh, path, write=write, ours=ours, claimed=claimed)

    def server(self, address: SshAddress) -> FioServer:
        """The host's fio server for this process, started on first use.

        One that did not start is gone from the host (see :meth:`FioServer.start`),
        one stopped after a stall too: the next use starts another.
        """
        host = self.host(address)
        if host.fio is None or host.fio.stopped:
            fio = FioServer(host.ssh, host.ssh.control_dir / "fio-server")
            fio.start()
            host.fio = fio
        return host.fio

    def close(self) -> list[str]:
        """Stop every fio server, release every lock, disconnect; what was left behind.

        Each host is taken out before it is closed: a second call (an interrupted
        close run again at exit) neither closes nor reports it again.
        """
        problems = []
        while self.hosts:
            _, host = self.hosts.popitem()
            problems += _close(host)
        if self._folder is not None:
            with contextlib.suppress(OSError):
                self._folder.rmdir()
        return problems


def _close(host: TestHost) -> list[str]:
    """Stop *host*'s fio server, release its locks, disconnect; what was left there."""
    problems = []
    fio, host.fio = host.fio, None
    if fio is not None:
        fio.stop()
        with contextlib.suppress(SsdError):  # the connection is gone: its end killed them
            left = fio.leftovers()
            if left:
                pids = ", ".join(map(str, left))
                problems.append(f"{host.ssh.where}: fio processes {pids} were left running")
    host.holder.close()  # every lock and claim of its drives at once
    while host.locks:  # those of a host without perl: a channel each
        host.locks.pop().release()
    host.ssh.close()
    return problems
