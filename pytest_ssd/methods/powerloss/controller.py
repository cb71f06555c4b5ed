"""Who cuts the power: ``--ssd-power-cycle=CMD``, or a plugin's ``pytest_ssd_power_cycle``.

A lab cuts a drive's power its own way (a PDU outlet, an enclosure's slot power, a
lab coordinator's power driver); the machine the drive is in stays up (the session
keeps its connection to it).  pytest-ssd asks, in
this order:

1. ``--ssd-power-cycle=CMD``: a command run on this machine (an argv, split as a
   shell would but run without one), within ``POWER_CYCLE_TIMEOUT_S``, with the
   device in its environment: ``SSD_DUT_PATH`` (its node), ``SSD_DUT_LABEL``,
   ``SSD_DUT_SERIAL`` and ``SSD_DUT_HOST`` (its test host, empty for this machine).
   It returns once the power is back; exit 0 means the cycle was done, and the last
   line it prints says what it did (the verdict's detail quotes it).
2. ``pytest_ssd_power_cycle(dut)`` (firstresult): a plugin returns an object with a
   ``name`` and a ``cycle()`` that cuts and restores the power and returns one line
   saying what it did, or None for a drive it does not power.

With neither, the drive has no declared power controller and the power-loss tests
are skipped, never tried.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pytest_ssd.errors import SsdError
from pytest_ssd.hookcall import first_answer
from pytest_ssd.methods.powerloss import OPTION
from pytest_ssd.proc import run
from pytest_ssd.secret import masked_command

if TYPE_CHECKING:
    from pluggy import HookCaller

    from pytest_ssd.site import Dut

#: the longest a power cycle may take, power back included
POWER_CYCLE_TIMEOUT_S = 600.0
#: why a drive has no power-loss test
NO_CONTROLLER = (
    f"no power controller for this drive: give {OPTION}=CMD or implement"
    " pytest_ssd_power_cycle (docs/power-loss.md)"
)


class PowerCycleError(SsdError):
    """A power cycle that failed (the command's exit, a plugin's cycle raising)."""


class PowerController(Protocol):
    """Cuts a drive's power and brings it back (what ``pytest_ssd_power_cycle`` returns)."""

    @property
    def name(self) -> str: ...

    def cycle(self) -> str:
        """Cut the power, restore it; one line saying what was done."""
        ...


@dataclass(frozen=True)
class CommandController:
    """``--ssd-power-cycle=CMD``: the command run here, the device in its environment."""

    argv: tuple[str, ...]
    dut: Dut
    artifacts: Path
    timeout_s: float = POWER_CYCLE_TIMEOUT_S

    @property
    def name(self) -> str:
        """The command as it may be written (its arguments may hold a BMC's password)."""
        return masked_command(shlex.join(self.argv))

    def environment(self) -> list[str]:
        """``NAME=value`` of the device, as ``env`` takes them."""
        host = self.dut.address.host if self.dut.address is not None else ""
        return [
            f"SSD_DUT_PATH={self.dut.path}",
            f"SSD_DUT_LABEL={self.dut.label or self.dut.id}",
            f"SSD_DUT_SERIAL={self.dut.identity.serial or ''}",
            f"SSD_DUT_HOST={host}",
        ]

    def cycle(self) -> str:
        done = run(
            ["env", *self.environment(), *self.argv],
            timeout=self.timeout_s,
            artifacts=self.artifacts,
            name="power-cycle",
        )
        if done.returncode != 0:
            raise PowerCycleError(
                f"{OPTION} {self.name} exited {done.returncode}: {done.last_error_line()}"
            )
        said = done.stdout.strip().splitlines()
        return said[-1] if said else f"{OPTION} exited 0"


def _problem(found: object) -> str | None:
    if not isinstance(getattr(found, "name", None), str):
        return "it has no name (a str)"
    if not callable(getattr(found, "cycle", None)):
        return "it has no method cycle()"
    return None


def power_controller(
    command: tuple[str, ...] | None, caller: HookCaller, dut: Dut, artifacts: Path
) -> PowerController | None:
    """The drive's power controller: the *command* given, else the first plugin's; None."""
    if command:
        return CommandController(command, dut, artifacts)
    answer = first_answer(caller, "a power controller or None", _problem, dut=dut)
    return None if answer is None else answer[0]  # type: ignore[return-value]  # checked
