"""A change of device state as recorded: its steps, bytes and time (see pytest_ssd.state).

A transition travels from the worker that ran it to the controller as JSON in
the test's ``user_properties``, and goes to the database and results.json.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

#: the user_properties name that carries a transition as JSON to the controller
TRANSITION_PROPERTY = "ssd.transition"


@dataclass(frozen=True, kw_only=True)
class StepDone:
    """A step as it ran: how long, and the bytes it moved."""

    kind: str
    name: str
    text: str
    seconds: float
    kernel: dict[str, int] | None
    fio_written: int
    detail: str = ""
    #: a steady-state verdict (window, fitted line, excursions, limits) and its graphs
    verdict: dict[str, Any] | None = None
    figures: tuple[str, ...] = ()
    #: the device's temperature during the step (pytest_ssd.health.summarize), if sampled
    health: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Transition:
    """One change of state of one device, triggered by the test that needed it."""

    device: str
    test: str
    source: str | None
    target: str
    reason: str
    steps: list[StepDone]
    start: str
    end: str
    seconds: float
    layout: dict[str, Any] = field(default_factory=dict)

    def totals(self) -> dict[str, int | None]:
        """Kernel counters summed over the steps (None when the device has none), fio's writes."""
        kernel = [s.kernel for s in self.steps if s.kernel is not None]
        has_kernel = bool(kernel) or not self.steps
        total: dict[str, int | None] = {
            key: sum(k[key] for k in kernel) if has_kernel else None
            for key in ("written", "read", "discarded")
        }
        total["fio_written"] = sum(s.fio_written for s in self.steps)
        return total

    @property
    def purges(self) -> int:
        return sum(1 for s in self.steps if s.kind == "purge")

    @property
    def preconditions(self) -> int:
        """1 when the transition wrote to reach its state (purges alone do not count)."""
        return int(any(s.kind in ("fio", "steady", "discard") for s in self.steps))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Transition:
        data = json.loads(text)
        data["steps"] = [
            StepDone(**{**s, "figures": tuple(s.get("figures", ()))}) for s in data["steps"]
        ]
        return cls(**data)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["totals"] = self.totals()
        return data
