"""Purge methods a suite or a plugin adds (the ``pytest_ssd_purge_methods`` hook).

A vendor's drive may have an erase of its own (a vendor-unique command, a tool
of its maker).  Such a method is offered before pytest-ssd's own: the first
added method that supports the device purges it, unless ``--ssd-purge`` names
another.  The safety guard runs before it, as before every built-in method (on a
test host, with the host's facts).

pytest-ssd's own methods are registered the same way (:mod:`.builtin`), after the
added ones.  A method declares where it runs as ``capabilities``
(:class:`~.methods.Capabilities`: this machine, test hosts, the programs it needs);
one that purges a host's device is given the device's machine,
``purge(identity, artifacts, machine)``, and runs its programs with
``machine.run(argv, timeout=...)``.  A method that declares nothing follows the
older convention: a ``purge`` that takes a ``machine`` argument reaches hosts, one
without it runs programs here and is offered for local devices only.  On a host's
device a method that cannot run there is passed over, and ``--ssd-purge`` naming it
is refused in one line.
"""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path
from typing import Protocol

from pytest_ssd.device import guard
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.view import View
from pytest_ssd.errors import ExtensionError, PurgeError, SsdError, call_extension, kind_of
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge.builtin import BUILTIN, BuiltinPurge, builtin
from pytest_ssd.purge.execute import ViewOf
from pytest_ssd.purge.methods import Capabilities, choose


class PurgeProvider(Protocol):
    """A purge method: its name (what ``--ssd-purge`` takes), whether it applies, the erase."""

    #: what ``--ssd-purge`` takes; declare ``capabilities`` (:class:`~.methods.Capabilities`)
    #: beside it: where it runs and what it needs (without it, the older convention holds)
    @property
    def name(self) -> str: ...

    def unsupported(self, identity: DeviceIdentity) -> str | None:
        """None when this method can purge *identity*, else why it cannot (one line)."""
        ...

    def purge(self, identity: DeviceIdentity, artifacts: Path) -> str:
        """Erase the whole device (commands' output under *artifacts*); one line on what ran.

        Raise :class:`~pytest_ssd.errors.PurgeError` when it fails.  A method that
        declares ``capabilities`` takes ``machine`` too
        (``purge(self, identity, artifacts, machine)``): the
        :class:`~pytest_ssd.machine.machine.Machine` the device is on.
        """
        ...


#: a method that may run: one a plugin added, or pytest-ssd's own (always given the machine)
Provider = PurgeProvider | BuiltinPurge
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


def _defined_in(provider: Provider) -> str:
    """The file *provider*'s ``purge`` is written in (its conftest.py or plugin module)."""
    try:
        return inspect.getfile(provider.purge)
    except (TypeError, OSError):
        return type(provider).__module__


def _where(provider: Provider, method: str) -> str:
    return f"purge method {provider.name!r} (from {_defined_in(provider)}): {method}"


def _unsupported(provider: Provider, identity: DeviceIdentity) -> str | None:
    """*provider*'s ``unsupported(identity)``; what it raises or returns wrongly is one line."""
    where = _where(provider, "unsupported()")
    why = call_extension(where, provider.unsupported, identity)
    if why is not None and not isinstance(why, str):
        raise ExtensionError(f"{where} returned {kind_of(why)} where a str or None was expected")
    return why


def _takes_machine(provider: Provider) -> bool:
    try:
        return "machine" in inspect.signature(provider.purge).parameters
    except (TypeError, ValueError):
        return False


def capabilities_of(provider: Provider) -> Capabilities:
    """What *provider* declares (``capabilities``); one that declares nothing follows the
    older convention: its purge reaches test hosts when it takes a ``machine``."""
    declared = getattr(provider, "capabilities", None)
    if isinstance(declared, Capabilities):
        return declared
    return Capabilities(hosts=_takes_machine(provider))


def _refused(provider: Provider, identity: DeviceIdentity, machine: Machine) -> str | None:
    """Why *provider* cannot purge *identity* on *machine* (its capabilities, then its own
    ``unsupported``), or None."""
    refused = capabilities_of(provider).refusal(machine)
    return refused if refused is not None else _unsupported(provider, identity)


def pick(
    identity: DeviceIdentity,
    providers: tuple[PurgeProvider, ...],
    forced: str | None,
    machine: Machine,
) -> Provider:
    """The method that purges *identity*: the one *forced* names, else the first added one
    that can, else the strongest built-in one; :class:`PurgeError` (one line) when none can.
    """
    if forced is not None:
        every: tuple[Provider, ...] = (*providers, *BUILTIN)
        chosen = next((p for p in every if p.name == forced), None)
        if chosen is None:
            raise PurgeError(f"--ssd-purge={forced}: no such purge method")
        why = _refused(chosen, identity, machine)
        if why is not None:
            on = f" on {machine.where}" if machine.where else ""
            raise PurgeError(f"--ssd-purge={forced} cannot purge {identity.path}{on}: {why}")
        return chosen
    found = next((p for p in providers if _refused(p, identity, machine) is None), None)
    return found if found is not None else builtin(choose(identity, machine=machine))


def run(
    provider: Provider,
    identity: DeviceIdentity,
    artifacts: Path,
    machine: Machine,
    view: ViewOf = lambda path: None,
) -> str:
    """The guard first (with the host's facts on a host), then *provider*'s erase: one line."""
    if isinstance(provider, BuiltinPurge):  # its guard covers the namespaces it erases too
        return provider.purge(identity, artifacts, machine, view)
    guard.check_writable(identity.path, view(identity.path) or View.of(machine, identity.path))
    artifacts.mkdir(parents=True, exist_ok=True)
    erase = provider.purge
    if isinstance(getattr(provider, "capabilities", None), Capabilities) or _takes_machine(
        provider
    ):
        erase = functools.partial(provider.purge, machine=machine)  # type: ignore[call-arg]
    where = _where(provider, "purge()")
    # a PurgeError (its documented failure) says itself what failed
    done = call_extension(where, erase, identity, artifacts, keep=(SsdError,))
    if not isinstance(done, str):
        raise ExtensionError(f"{where} returned {kind_of(done)} where a str was expected")
    return f"{provider.name} (added by a plugin): {done}"
