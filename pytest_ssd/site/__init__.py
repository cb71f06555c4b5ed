"""A device's services on its machine (the transport beneath is :mod:`pytest_ssd.machine`).

A device is in a :class:`Site`: this machine or a test host reached over SSH, a
host like any other.  A site answers for everything pytest-ssd does on a device's
machine: its programs and files (its :class:`~pytest_ssd.machine.machine.Machine`),
the guard's view, the device's key, identity, lock and summary, the fio runner,
health sources, the kernel's counters, the progress feed and the tuner of its
settings: written once for every machine, :class:`MachineSite`, through the machine
alone.  Which machine a device is in is chosen once, where the device is resolved
(:meth:`Sites.of`); :class:`DeviceSite` is one device's services on its site, shared by
its state keeper and its tests' ``ssd``.
"""

from __future__ import annotations

from pytest_ssd.site.base import Site, SiteLock, Tuning
from pytest_ssd.site.device import DeviceSite
from pytest_ssd.site.dut import Dut
from pytest_ssd.site.jobs import MachineSite
from pytest_ssd.site.sites import Sites

__all__ = [
    "DeviceSite",
    "Dut",
    "MachineSite",
    "Site",
    "SiteLock",
    "Sites",
    "Tuning",
]
