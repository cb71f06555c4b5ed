"""What suites and plugins add to a session through pytest-ssd's hooks (:mod:`.newhooks`).

The session below the pytest glue knows no pytest: the plugin turns the hooks
into this object, and the session, its devices and their state keepers use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_ssd.device.drive_class import DriveClass
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.health.sources import Source
from pytest_ssd.purge.extra import PurgeProvider


def _no_class(identity: DeviceIdentity) -> DriveClass | None:
    return None


def _no_source(identity: DeviceIdentity) -> Source | None:
    return None


@dataclass(frozen=True, kw_only=True)
class Extensions:
    """The hooks' answers: a drive's class, a health source, added purge methods."""

    #: the class of a drive that is not scratch, before pytest-ssd's guess (None: guess)
    drive_class: Callable[[DeviceIdentity], DriveClass | None] = _no_class
    #: a device's health source, before pytest-ssd's own (None: find one)
    health_source: Callable[[DeviceIdentity], Source | None] = _no_source
    #: purge methods tried before pytest-ssd's own
    purge_methods: tuple[PurgeProvider, ...] = ()

    @property
    def purge_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.purge_methods)
