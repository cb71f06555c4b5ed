"""The sites of this process's devices: this machine and the test hosts it connects to."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass, field

from pytest_ssd.errors import SsdError
from pytest_ssd.machine.address import SshAddress
from pytest_ssd.site.base import Site
from pytest_ssd.site.host import HostSite
from pytest_ssd.site.local import LocalSite
from pytest_ssd.testhosts import Hosts


@dataclass
class Sites:
    """This machine, and the test hosts of ssh:// devices (connections, locks, fio servers)."""

    local: LocalSite = field(default_factory=LocalSite)
    hosts: Hosts = field(default_factory=Hosts)

    def of(self, address: SshAddress | None) -> Site:
        """The site of a device ``--dut`` placed at *address* (None: this machine).

        The one place the choice between this machine and a test host is made.
        """
        return self.local if address is None else HostSite(self.hosts, address)

    def machine_of(self, address: SshAddress | None) -> Hashable:
        """What tells the devices of one machine from others': the host as ssh resolves
        it (``root@lab-07`` and ``lab-07`` with ``User root`` are one host, looked at once,
        and connected as the first ``--dut`` spells it), else the address without its path
        (its refusal comes in its own ``--dut``'s turn); None for this machine."""
        if address is None:
            return None
        try:
            return self.hosts.key(address)
        except SsdError:
            return dataclasses.replace(address, path="")

    def close_hosts(self) -> list[str]:
        """Stop this process's fio servers on test hosts, unlock, disconnect; what was left."""
        return self.hosts.close()

    def close(self) -> None:
        """Release this machine's locks."""
        self.local.close()
