"""The sites of this process's devices: this machine and the test hosts it connects to."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from pytest_ssd.fio.server import FioServers
from pytest_ssd.machine.address import HostAddress
from pytest_ssd.machine.machines import Machines
from pytest_ssd.site.base import Site
from pytest_ssd.site.jobs import MachineSite


@dataclass
class Sites:
    """This process's machines (connections, locks) and the fio servers it runs on them."""

    machines: Machines = field(default_factory=Machines)
    servers: FioServers = field(default_factory=FioServers)

    def of(self, address: HostAddress | None) -> Site:
        """The site of a device ``--dut`` placed at *address* (None: this machine): the same
        jobs on whichever machine :meth:`~pytest_ssd.machine.machines.Machines.of` reaches."""
        return MachineSite(self.machines, self.servers, address)

    def machine_of(self, address: HostAddress | None) -> Hashable:
        """What tells the devices of one machine from others'
        (:meth:`~pytest_ssd.machine.machines.Machines.machine_of`)."""
        return self.machines.machine_of(address)

    def close(self) -> list[str]:
        """Stop this process's fio servers, release every machine's locks, disconnect; what
        was left running.  A second call does nothing."""
        try:
            return self.servers.close()
        finally:  # whatever the servers did: the locks go
            self.machines.close()
