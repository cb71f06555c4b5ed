"""What a device's state keeper and its tests' ``ssd`` use of the device's machine.

One object per device (:class:`pytest_ssd.site.DeviceSite`) answers for both: the
checks before a write, the guard's view of the machine, health sampling, the fio
runner, the kernel's counters and the progress feed, each on the machine the device
is in.  Whether that is this machine or a test host is decided where the device is
resolved; nothing that uses this interface asks.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from pytest_ssd.device.view import View
from pytest_ssd.fio.runners import FioRunner
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Sampler
from pytest_ssd.machine.machine import Machine
from pytest_ssd.state.accounting import Counters
from pytest_ssd.state.progress import Progress


class DeviceServices(Protocol):
    """The services of one device, on the machine it is in."""

    @property
    def machine(self) -> Machine:
        """The machine the device is in: its programs and files."""
        ...

    def guard(self) -> None:
        """Refuse (SafetyError) unless the device may be written now."""
        ...

    def same(self) -> None:
        """Stop the run unless the node still names the device locked and confirmed."""
        ...

    def view(self, path: str) -> View:
        """The guard's facts about *path* now, on the device's machine."""
        ...

    def sampler(self) -> Sampler:
        """A new health sampler of the device (inactive, with the reason, without a sensor)."""
        ...

    def runner(self) -> FioRunner:
        """Where fio runs the device's jobs."""
        ...

    def counters(self) -> Counters | None:
        """The kernel's byte counters of the device now (None: it has none)."""
        ...

    def feeding(self, follow: Progress | None) -> AbstractContextManager[StatusCallback | None]:
        """The ``on_status`` of a fio run that *follow* shows the progress of."""
        ...
