"""pytest-ssd's own purge methods, registered as a plugin registers its own.

Each is shaped as a :class:`~pytest_ssd.purge.extra.PurgeProvider` with declared
:class:`~pytest_ssd.purge.methods.Capabilities` (:data:`~.methods.CAPABILITIES`), its
``purge`` always given the device's machine:
:data:`BUILTIN` lists them strongest first, after the methods plugins add.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge.execute import ViewOf, purge
from pytest_ssd.purge.methods import CAPABILITIES, ORDER, Capabilities, PurgeMethod, support


def _here(path: str) -> None:
    return None


@dataclass(frozen=True)
class BuiltinPurge:
    """One built-in method: its name, capabilities, whether it applies, and the erase."""

    name: str
    method: PurgeMethod
    capabilities: Capabilities

    def unsupported(self, identity: DeviceIdentity) -> str | None:
        supported, reason = support(identity, self.method)
        return None if supported else reason

    def purge(
        self,
        identity: DeviceIdentity,
        artifacts: Path,
        machine: Machine,
        view: ViewOf = _here,
    ) -> str:
        """Purge and read back (the guard first, also on the namespaces it erases too)."""
        result = purge(identity, self.method, artifacts=artifacts, machine=machine, view=view)
        text = f"{result.method} in {result.seconds:.1f} s"
        if result.weaker:
            text += f" ({result.weaker})"
        return f"{text}; {result.verification.detail}"


#: every built-in method, strongest first
BUILTIN: tuple[BuiltinPurge, ...] = tuple(BuiltinPurge(str(m), m, CAPABILITIES[m]) for m in ORDER)


def builtin(method: PurgeMethod) -> BuiltinPurge:
    """The registered provider of *method*."""
    return next(p for p in BUILTIN if p.method is method)
