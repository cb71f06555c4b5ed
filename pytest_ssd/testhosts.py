"""The session's test hosts: one SSH connection each, the locks and fio servers held there.

A ``--dut=ssh://[user@]host[:port]/dev/...`` device is reached through a
:class:`TestHost`: its connection (:class:`~pytest_ssd.machine.ssh.Ssh`: the
controller logs in once per host; an xdist worker multiplexes over the
controller's master and honours its channel budget, :meth:`Hosts.shared` and
:meth:`Hosts.join`), the device locks the controller holds there for the session
(:class:`~pytest_ssd.device.node.DeviceLock`, all in one process on one
channel: :meth:`~pytest_ssd.machine.machine.Machine.locks`), the host's agent
(:mod:`~pytest_ssd.machine.agent`, one channel: what lasts in every process goes
through it on forwarded sockets) and the fio server each process running tests
starts there on first use (:class:`~pytest_ssd.fio.server.FioServer`).
:meth:`Hosts.close` stops the servers, checks that no fio of theirs is left on
any host, releases the locks and closes the connections; it says what it found
left behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ssd.errors import SsdError
from pytest_ssd.fio.server import FioServer
from pytest_ssd.machine import agent
from pytest_ssd.machine.address import SshAddress
from pytest_ssd.machine.locks import NodeLocks
from pytest_ssd.machine.machine import SshMachine
from pytest_ssd.machine.slots import Slots
from pytest_ssd.machine.ssh import (
    LOST_GRACE_S,
    RUN_CHANNELS,
    Held,
    Ssh,
    control_folder,
    resolve,
)


@dataclass
class TestHost:
    """One test host of the session, in this process."""

    __test__ = False  # not a test class, whatever pytest collects

    ssh: Ssh
    machine: SshMachine
    #: the one process there that holds every lock and claim of the session's drives
    holder: NodeLocks
    fio: FioServer | None = None
    #: the agent's channel (the connection's owner runs it; None: not yet, or no perl there)
    agent: Held | None = None
    #: the agent was asked for (it runs, or the host has no perl)
    agent_tried: bool = False


@dataclass(frozen=True)
class Shared:
    """What a worker needs to use a host's connection the controller owns."""

    #: the controller's master socket
    master: str
    #: the controller's channel budget (:class:`~pytest_ssd.machine.slots.Slots`)
    slots: str
    #: the host's agent's socket, forwarded by the controller's master (None: no perl there)
    agent: str | None


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
    #: a worker's: the controller's connections, by key (:meth:`join`)
    _joined: dict[str, Shared] = field(default_factory=dict, repr=False)

    def key(self, address: SshAddress) -> str:
        """One connection per user, host and port as ssh resolves them (``ssh -G``)."""
        machine = dataclasses.replace(address, path="")  # one ``ssh -G`` for a host's drives
        if machine not in self._keys:
            self._keys[machine] = resolve(address, self.config)
        return self._keys[machine]

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
                joined = self._joined.get(key)
                if joined is not None:  # a worker: the controller's master, budget and agent
                    ssh.master = Path(joined.master)
                    ssh.agent = Path(joined.agent) if joined.agent else None
                    ssh.slots = Slots(Path(joined.slots), RUN_CHANNELS)
                ssh.open()
                machine = SshMachine(ssh)
                self.hosts[key] = TestHost(ssh, machine, machine.locks(ssh.control_dir / "locks"))
            return self.hosts[key]

    def server(self, address: SshAddress) -> FioServer:
        """The host's fio server for this process, started on first use.

        One that did not start is gone from the host (see :meth:`FioServer.start`),
        one stopped after a stall too: the next use starts another.
        """
        host = self.host(address)
        if host.fio is None or host.fio.stopped:
            self.start_agent(host)
            fio = FioServer(host.ssh, host.ssh.control_dir / "fio-server")
            fio.start()
            host.fio = fio
        return host.fio

    def start_agent(self, host: TestHost) -> None:
        """Start *host*'s agent once, on the connection this process owns (a worker's is the
        controller's): from then on :meth:`~pytest_ssd.machine.ssh.Ssh.stream` runs what
        lasts through it, off sshd's session budget."""
        with self._connecting:
            if host.agent_tried or host.ssh.master is not None:
                return
            host.agent_tried = True
            started = agent.start(host.ssh, host.ssh.control_dir / "agent")
            if started is not None:
                host.agent, there = started
                here = host.ssh.control_dir / "agent.sock"
                host.ssh.forward(here, there)
                host.ssh.agent = here

    def shared(self) -> dict[str, Any]:
        """What xdist workers need to use this process's connections (its agents started)."""
        for host in list(self.hosts.values()):
            self.start_agent(host)
        return {
            "keys": [[dataclasses.asdict(address), key] for address, key in self._keys.items()],
            "hosts": {
                key: dataclasses.asdict(
                    Shared(
                        str(host.ssh.control_path),
                        str(host.ssh.budget.folder),
                        str(host.ssh.agent) if host.ssh.agent else None,
                    )
                )
                for key, host in self.hosts.items()
            },
        }

    def join(self, shared: dict[str, Any]) -> None:
        """Use the controller's connections (:meth:`shared`): a worker never logs in."""
        for address, key in shared.get("keys", []):
            self._keys[SshAddress(**address)] = key
        for key, found in shared.get("hosts", {}).items():
            self._joined[key] = Shared(**found)

    def lost(self, said: str) -> str | None:
        """The host whose connection this process opened has ended, in one line (None: none).

        Its sshd stopped, it rebooted or lost power: every command for it fails from
        then on, so the run cannot go on there.  A connection that *said* (a failed
        test's report) names may be ending still: it is given a moment.
        """
        for host in list(self.hosts.values()):
            if host.ssh.lost(LOST_GRACE_S if host.ssh.where in said else 0.0):
                return f"{host.ssh.where}: the test host's connection was lost"
        return None

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
    held, host.agent = host.agent, None
    if held is not None:
        held.close(agent.STOP_TIMEOUT_S)
    host.ssh.close()
    return problems
