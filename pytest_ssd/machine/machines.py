"""The machines of this process's devices: this one, and each test host over one SSH connection.

:meth:`Machines.of` gives a device's machine as this process reaches it (:class:`Reached`):
its programs and files (:class:`~pytest_ssd.machine.machine.Machine`) and the one holder
of the session's device locks and claims there
(:meth:`~pytest_ssd.machine.machine.Machine.locks`: this process here, one process on one
channel on a host).  A ``--dut=ssh://[user@]host[:port]/dev/...`` device is reached
through a :class:`Connection`: its SSH connection (:class:`~pytest_ssd.machine.ssh.Ssh`:
the controller logs in once per host; an xdist worker multiplexes over the controller's
master and honours its channel budget, :meth:`Machines.shared` and :meth:`Machines.join`)
and the host's agent (:mod:`~pytest_ssd.machine.agent`, one channel: what lasts in every
process, a fio server each, goes through it on forwarded sockets: it is started before
the first program the machine serves, :meth:`~pytest_ssd.machine.machine.Machine.serve`).
:meth:`Machines.close` releases the locks and closes the connections.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pytest_ssd.errors import SsdError
from pytest_ssd.machine import agent
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.machine.held import Held
from pytest_ssd.machine.locks import NodeLocks
from pytest_ssd.machine.machine import LOCAL, Machine, SshMachine
from pytest_ssd.machine.slots import Slots
from pytest_ssd.machine.ssh import LOST_GRACE_S, RUN_CHANNELS, Ssh, control_folder, resolve


@dataclass
class Reached:
    """A device's machine as this process reaches it."""

    machine: Machine
    #: the one holder there of every lock and claim of the session's drives
    holder: NodeLocks

    def close(self) -> None:
        """Let every lock and claim there go (at once, the holder closed whole)."""
        self.holder.close()


@dataclass
class Connection(Reached):
    """A test host of the session, over this process's SSH connection."""

    ssh: Ssh
    #: the agent's channel (the connection's owner runs it; None: not yet, or no perl there)
    agent: Held | None = None
    #: the agent was asked for (it runs, or the host has no perl)
    agent_tried: bool = False

    def close(self) -> None:
        """Release its locks, stop its agent, disconnect."""
        super().close()
        held, self.agent = self.agent, None
        if held is not None:
            held.close(agent.STOP_TIMEOUT_S)
        self.ssh.close()


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
class Machines:
    """This machine, and the test hosts of this process (connected on first use)."""

    #: an ssh_config to use instead of ``~/.ssh/config`` (``--ssd-ssh-config``)
    config: Path | None = None
    hosts: dict[str, Connection] = field(default_factory=dict)
    _here: Reached | None = field(default=None, repr=False)
    #: its own: a device here is not kept waiting while a host connects
    _making_here: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _keys: dict[HostAddress, str] = field(default_factory=dict, repr=False)
    _folder: Path | None = None
    #: devices are prepared in threads: one connection per host all the same
    _connecting: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: a worker's: the controller's connections, by key (:meth:`join`)
    _joined: dict[str, Shared] = field(default_factory=dict, repr=False)

    def key(self, address: HostAddress) -> str:
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

    @property
    def here(self) -> Reached:
        """This machine, its holder made on first use."""
        with self._making_here:
            if self._here is None:
                self._here = Reached(LOCAL, LOCAL.locks(Path()))
            return self._here

    def of(self, address: HostAddress | None) -> Reached:
        """The machine of a device ``--dut`` placed at *address* (None: this one), connected
        (a one-line :class:`DeviceError` when unreachable).

        The one place the choice between this machine and a test host is made.
        """
        return self.here if address is None else self.host(address)

    def machine_of(self, address: HostAddress | None) -> Hashable:
        """What tells the devices of one machine from others': the host as ssh resolves
        it (``root@lab-07`` and ``lab-07`` with ``User root`` are one host, looked at once,
        and connected as the first ``--dut`` spells it), else the address without its path
        (its refusal comes in its own ``--dut``'s turn); None for this machine."""
        if address is None:
            return None
        try:
            return self.key(address)
        except SsdError:
            return dataclasses.replace(address, path="")

    def host(self, address: HostAddress) -> Connection:
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
                host = Connection(machine, machine.locks(ssh.control_dir / "locks"), ssh)
                machine.lasting = partial(self.start_agent, host)
                self.hosts[key] = host
            return self.hosts[key]

    def start_agent(self, host: Connection) -> None:
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
            self._keys[HostAddress(**address)] = key
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

    def close(self) -> None:
        """Release every machine's locks, disconnect from every host.

        Each host is taken out before it is closed: a second call (an interrupted close
        run again at exit) does not close it again.
        """
        while self.hosts:
            _, host = self.hosts.popitem()
            host.close()
        here, self._here = self._here, None
        if here is not None:
            here.close()
        if self._folder is not None:
            with contextlib.suppress(OSError):
                self._folder.rmdir()
