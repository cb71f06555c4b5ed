"""A test host as a device's site: its device jobs are every machine's (:class:`MachineSite`)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ssd.fio.runners import FioRunner, HostFio
from pytest_ssd.machine.address import SshAddress, parse_address
from pytest_ssd.machine.locks import NodeLocks
from pytest_ssd.machine.machine import Machine
from pytest_ssd.site.jobs import MachineSite
from pytest_ssd.testhosts import Hosts, TestHost


@dataclass
class HostSite(MachineSite):
    """The test host of *address*, through the session's connection to it (*hosts*)."""

    hosts: Hosts
    address: SshAddress

    @property
    def host(self) -> TestHost:
        """The host, connected (a one-line :class:`DeviceError` when unreachable)."""
        return self.hosts.host(self.address)

    @property
    def machine(self) -> Machine:
        return self.host.machine

    def holder(self) -> NodeLocks:
        return self.host.holder  # closed whole with the host's connection

    def labelled(self, label: str) -> str:
        return f"{label} on {self.address.label}"

    def described(self, summary: str) -> str:
        return f"{summary} on {self.address.destination} port {self.address.port or 22}"

    def named_again(self, first: str, raw: str) -> str:
        earlier = parse_address(first)
        spelled = (earlier.destination, earlier.port) != (
            self.address.destination,
            self.address.port,
        )
        return ": the same host named twice" if spelled else ""

    @property
    def live_status(self) -> bool:
        return HostFio.live_status

    def runner(self) -> FioRunner:
        return HostFio(self.hosts.server(self.address), self.machine)
