"""One device's services on its site: what its state keeper and its tests' ``ssd`` use."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from pytest_ssd.device import guard
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.view import View
from pytest_ssd.errors import SsdError, present
from pytest_ssd.fio.runners import FioRunner
from pytest_ssd.fio.status import StatusCallback
from pytest_ssd.health import Sampler, Source
from pytest_ssd.machine.machine import Machine
from pytest_ssd.site.base import Site
from pytest_ssd.site.dut import Dut
from pytest_ssd.state.accounting import Counters
from pytest_ssd.state.progress import Progress


def no_added_source(identity: DeviceIdentity) -> Source | None:
    return None


@dataclass
class DeviceSite:
    """*dut* on its *site*: the checks before writes, health, fio, counters, progress.

    Implements :class:`~pytest_ssd.state.services.DeviceServices`.
    """

    dut: Dut
    site: Site
    #: ``--ssd-confirm``: what the user confirmed may be overwritten
    confirm: tuple[str, ...] = ()
    #: ``--ssd-health-interval`` (0: no sampling)
    interval: float = 1.0
    #: a plugin's health source for a device (``pytest_ssd_health_source``), tried first
    added_source: Callable[[DeviceIdentity], Source | None] = no_added_source
    _source: tuple[Source | None, str] | None = field(default=None, repr=False)

    @property
    def machine(self) -> Machine:
        return self.site.machine

    def view(self, path: str, claimed: bool = True) -> View:
        """The guard's facts about *path* now, on the device's machine (knowing the session's
        claim on it, unless it is not *claimed* yet)."""
        held = self.dut.claimed if claimed else frozenset()
        return self.site.view(path, self.dut.lock_pid, held)

    def same(self, view: View | None = None) -> None:
        """Stop the run (:class:`~.pinned.DeviceChanged`) unless the node still names the
        device locked and confirmed: its device number and identity read again now."""
        pinned = present(self.dut.pinned, "the device locked")
        node = str(self.dut.path)
        try:
            now = Pinned.of(*self.site.read(self.dut.path, view or self.view(node)))
        except (OSError, SsdError) as exc:
            pinned.check(node, None, f"it cannot be identified: {exc}")
            return
        pinned.check(node, now)

    def guard(self, claimed: bool = True, view: View | None = None) -> None:
        """Refuse (SafetyError) unless the device may be written now: the same device, the
        guard and ``--ssd-confirm`` (before the session's claim: not *claimed*; *view*: the
        site's facts taken for it now, None: look now)."""
        dut = self.dut
        view = view or self.view(str(dut.path), claimed)
        self.same(view)
        guard.check_writable(dut.path, view)
        if not dut.scratch:
            identity = dut.identity
            shown = self.site.located(dut.path)
            guard.check_confirmation(
                shown, identity.summary(), identity.confirm_token, self.confirm
            )

    def health(self) -> tuple[Source | None, str]:
        """The device's health source (a plugin's first) and what it is, or why none."""
        if self._source is None:
            added = self.added_source(self.dut.identity)
            self._source = (
                (added, added.name)
                if added is not None
                else self.site.health_source(self.dut.identity)
            )
        return self._source

    def sampler(self) -> Sampler:
        """A health sampler (inactive, with the reason, where the device has no sensor)."""
        source, what = self.health()
        interval = self.interval
        reason = what if source is None else ("" if interval else "--ssd-health-interval=0")
        return Sampler(source if interval else None, interval, reason)

    def runner(self) -> FioRunner:
        return self.site.runner()

    def counters(self) -> Counters | None:
        return self.site.counters(self.dut.path, self.dut.identity.kernel_name)

    def feeding(self, follow: Progress | None) -> AbstractContextManager[StatusCallback | None]:
        return self.site.feeding(follow, self.dut.identity.kernel_name)
