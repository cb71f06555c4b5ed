"""Purge methods a suite or a plugin adds (the ``pytest_ssd_purge_methods`` hook).

A vendor's drive may have an erase of its own (a vendor-unique command, a tool
of its maker).  Such a method is offered before pytest-ssd's own: the first
added method that supports the device purges it, unless ``--ssd-purge`` names
another.  The safety guard runs before it, as before every built-in method (on a
test host, with the host's facts).

A method whose ``purge`` takes a ``machine`` argument runs its programs with
``machine.run(argv, timeout=...)`` and so purges a device on a test host too (the
machine is the host's; this machine's for a local device).  One without it runs
programs here, so it is offered for local devices only: a host's device gets
pytest-ssd's own methods, and ``--ssd-purge`` naming it is refused for that device.
"""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path
from typing import Protocol

from pytest_ssd.device import guard
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ExtensionError, PurgeError, SsdError, call_extension, kind_of
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.purge.execute import ViewOf


class PurgeProvider(Protocol):
    """A purge method: its name (what ``--ssd-purge`` takes), whether it applies, the erase."""

    name: str

    def unsupported(self, identity: DeviceIdentity) -> str | None:
        """None when this method can purge *identity*, else why it cannot (one line)."""
        ...

    def purge(self, identity: DeviceIdentity, artifacts: Path) -> str:
        """Erase the whole device (commands' output under *artifacts*); one line on what ran.

        Raise :class:`~pytest_ssd.errors.PurgeError` when it fails.  Declared as
        ``purge(self, identity, artifacts, machine)``, it is also given devices on
        test hosts, with the :class:`~pytest_ssd.machine.machine.Machine` to run on.
        """
        ...


#: what ``--ssd-purge`` takes as a name
NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def provider_problem(provider: object) -> str | None:
    """Why *provider* (what a plugin returned) is no :class:`PurgeProvider`, or None."""
    name = getattr(provider, "name", None)
    if not isinstance(name, str) or not NAME.match(name):
        return "it has no name" if name is None else f"its name {name!r:.60} is not a method name"
    for method in ("unsupported", "purge"):
        if not callable(getattr(provider, method, None)):
            return f"it has no method {method}()"
    return None


def _defined_in(provider: PurgeProvider) -> str:
    """The file *provider*'s ``purge`` is written in (its conftest.py or plugin module)."""
    try:
        return inspect.getfile(provider.purge)
    except (TypeError, OSError):
        return type(provider).__module__


def _where(provider: PurgeProvider, method: str) -> str:
    return f"purge method {provider.name!r} (from {_defined_in(provider)}): {method}"


def _unsupported(provider: PurgeProvider, identity: DeviceIdentity) -> str | None:
    """*provider*'s ``unsupported(identity)``; what it raises or returns wrongly is one line."""
    where = _where(provider, "unsupported()")
    why = call_extension(where, provider.unsupported, identity)
    if why is not None and not isinstance(why, str):
        raise ExtensionError(f"{where} returned {kind_of(why)} where a str or None was expected")
    return why


def reaches_hosts(provider: PurgeProvider) -> bool:
    """*provider*'s purge takes a ``machine`` (it runs its programs where the device is)."""
    try:
        return "machine" in inspect.signature(provider.purge).parameters
    except (TypeError, ValueError):
        return False


def pick(
    identity: DeviceIdentity,
    providers: tuple[PurgeProvider, ...],
    forced: str | None,
    machine: Machine = LOCAL,
) -> PurgeProvider | None:
    """The added method that purges *identity*: the one *forced* names, else the first that can.

    None: a built-in method purges it (*forced* names one of those, or no added method can).
    On a test host only methods that take a ``machine`` are offered.
    """
    remote = machine is not LOCAL
    if forced is not None:
        chosen = next((p for p in providers if p.name == forced), None)
        if chosen is not None and remote and not reaches_hosts(chosen):
            raise PurgeError(
                f"--ssd-purge={forced} cannot purge {identity.path} on {machine.where}: it runs"
                " its programs on this machine (its purge takes no machine argument)"
            )
        if chosen is not None and (why := _unsupported(chosen, identity)) is not None:
            raise PurgeError(f"--ssd-purge={forced} cannot purge {identity.path}: {why}")
        return chosen
    offered = (p for p in providers if not remote or reaches_hosts(p))
    return next((p for p in offered if _unsupported(p, identity) is None), None)


def run(
    provider: PurgeProvider,
    identity: DeviceIdentity,
    artifacts: Path,
    machine: Machine = LOCAL,
    view: ViewOf = lambda path: None,
) -> str:
    """The guard first (with the host's facts on a host), then *provider*'s erase: one line."""
    guard.check_writable(identity.path, view(identity.path))
    artifacts.mkdir(parents=True, exist_ok=True)
    erase = (
        functools.partial(provider.purge, machine=machine)  # type: ignore[call-arg]
        if reaches_hosts(provider)
        else provider.purge
    )
    where = _where(provider, "purge()")
    # a PurgeError (its documented failure) says itself what failed
    done = call_extension(where, erase, identity, artifacts, keep=(SsdError,))
    if not isinstance(done, str):
        raise ExtensionError(f"{where} returned {kind_of(done)} where a str was expected")
    return f"{provider.name} (added by a plugin): {done}"
