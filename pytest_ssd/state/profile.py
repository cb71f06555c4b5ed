"""Profiles: the method verbatim (``full``) or scaled down for smoke runs and CI (``quick``).

``quick`` runs the same steps in the same order with documented factors:
durations (idle periods, steady-state windows) divided by :data:`QUICK_TIME_DIVISOR`
with a floor of one second, and the device state confined to the first
:data:`QUICK_SPAN_CAP` of the device (a short-stroked drive: the regions are
computed on that span; the purge still covers the whole device).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

GiB = 1 << 30
QUICK_TIME_DIVISOR = 300.0
QUICK_SPAN_CAP = 16 * GiB
PROFILE_NAMES = ("quick", "full")


@dataclass(frozen=True)
class Idle:
    """The method's idle ("rest") periods, seconds, at full scale."""

    #: seed 000/001: 15 minutes after the purge define the idle state
    after_purge_s: float = 900.0
    #: cSSD preconditioning: "generous idle between steps" (choice: 5 minutes)
    between_steps_s: float = 300.0
    #: fill drive: the rest between the two 100 % passes (choice: 5 minutes)
    fill_gap_s: float = 300.0
    #: consumer flow: rest before each measurement (seed 000: "generous"; choice: 1 minute)
    between_tests_s: float = 60.0


@dataclass(frozen=True)
class Profile:
    """How literally the method runs on one device."""

    name: str
    idle: Idle = Idle()
    #: seed 000's enterprise rule: bandwidth slope within 10 % held for 30 s
    ss_duration_s: float = 30.0
    #: SNIA PTS round length per cell (1 minute)
    snia_round_s: float = 60.0

    @property
    def quick(self) -> bool:
        return self.name == "quick"

    def seconds(self, full_s: float) -> float:
        """A duration of the method under this profile."""
        if not self.quick or full_s <= 0:
            return full_s
        return max(1.0, full_s / QUICK_TIME_DIVISOR)

    @property
    def ss_duration(self) -> int:
        """Seconds fio's steady-state criterion must hold (fio needs at least 2)."""
        return max(2, round(self.seconds(self.ss_duration_s)))

    def span(self, capacity: int) -> int:
        """Bytes of the device the states are built on."""
        return min(capacity, QUICK_SPAN_CAP) if self.quick else capacity

    def describe(self) -> str:
        if not self.quick:
            return "full: the method verbatim"
        return (
            f"quick: durations / {QUICK_TIME_DIVISOR:g} (at least 1 s), states on the first "
            f"{QUICK_SPAN_CAP // GiB} GiB at most"
        )


#: --ssd-idle names -> Idle fields
IDLE_NAMES = {
    "after-purge": "after_purge_s",
    "between-steps": "between_steps_s",
    "fill-gap": "fill_gap_s",
    "between-tests": "between_tests_s",
}
#: states of the consumer flow, which rests between measurements (the enterprise flow does not)
RESTING_STATES = ("fob", "filled", "cssd", "used75")


#: the longest idle period an option may set: a day (the method's longest is 15 minutes)
MAX_IDLE_S = 86_400.0


def idle_option(text: str) -> tuple[str, float]:
    """argparse type for ``--ssd-idle=NAME=SECONDS`` (the full-profile value; quick scales it)."""
    name, _, value = text.partition("=")
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if name not in IDLE_NAMES or not 0 <= seconds <= MAX_IDLE_S:
        raise argparse.ArgumentTypeError(
            f"--ssd-idle={text}: give NAME=SECONDS with NAME one of {', '.join(IDLE_NAMES)}"
            f" and SECONDS from 0 to {MAX_IDLE_S:g} (a day)"
        )
    return IDLE_NAMES[name], seconds


def profile_for(
    name: str | None, scratch: bool, idle: tuple[tuple[str, float], ...] = ()
) -> Profile:
    """The named profile, or the default: quick on scratch devices, full on real ones.

    *idle* overrides the method's idle periods (seconds at full scale).
    """
    return Profile(
        name or ("quick" if scratch else "full"), dataclasses.replace(Idle(), **dict(idle))
    )
