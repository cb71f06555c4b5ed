"""Purge methods a suite or a plugin adds (the ``pytest_ssd_purge_methods`` hook).

A vendor's drive may have an erase of its own (a vendor-unique command, a tool
of its maker).  Such a method is offered before pytest-ssd's own: the first
added method that supports the device purges it, unless ``--ssd-purge`` names
another.  The safety guard runs before it, as before every built-in method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pytest_ssd.device import guard
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import PurgeError


class PurgeProvider(Protocol):
    """A purge method: its name (what ``--ssd-purge`` takes), whether it applies, the erase."""

    name: str

    def unsupported(self, identity: DeviceIdentity) -> str | None:
        """None when this method can purge *identity*, else why it cannot (one line)."""
        ...

    def purge(self, identity: DeviceIdentity, artifacts: Path) -> str:
        """Erase the whole device (commands' output under *artifacts*); one line on what ran.

        Raise :class:`~pytest_ssd.errors.PurgeError` when it fails.
        """
        ...


def pick(
    identity: DeviceIdentity, providers: tuple[PurgeProvider, ...], forced: str | None
) -> PurgeProvider | None:
    """The added method that purges *identity*: the one *forced* names, else the first that can.

    None: a built-in method purges it (*forced* names one of those, or no added method can).
    """
    if forced is not None:
        chosen = next((p for p in providers if p.name == forced), None)
        if chosen is not None and (why := chosen.unsupported(identity)) is not None:
            raise PurgeError(f"--ssd-purge={forced} cannot purge {identity.path}: {why}")
        return chosen
    return next((p for p in providers if p.unsupported(identity) is None), None)


def run(provider: PurgeProvider, identity: DeviceIdentity, artifacts: Path) -> str:
    """The guard first, then *provider*'s erase: one line on what ran."""
    guard.check_writable(identity.path)
    artifacts.mkdir(parents=True, exist_ok=True)
    return f"{provider.name} (added by a plugin): {provider.purge(identity, artifacts)}"
