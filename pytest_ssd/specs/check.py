"""Checking a measurement against a spec line.

A :class:`SpecCheck` is the small object of the style guide: ``fails(measured)``
returns a message that reads like the seeds' tables, or None.  ``evaluate``
gives the whole :class:`Verdict`, whose ``as_dict()`` is a conformance-table row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from pytest_ssd.specs.model import Datasheet, SpecLine
from pytest_ssd.specs.units import Quantity, exact


@dataclass(frozen=True)
class Verdict:
    """A spec line, what was measured, the ratio measured / spec, and whether the line is met."""

    line: SpecLine
    measured: Quantity
    ratio: Fraction
    met: bool

    @property
    def needs(self) -> str:
        """The pass rule as the message prints it: '≥ 90 %' or '≤ 100 %'."""
        if self.line.kind == "bound":
            return "≤ 100 %"
        return f"≥ {float(exact(self.line.tolerance) * 100):g} %"

    @property
    def message(self) -> str:
        """'SEQ read QD8 128KiB: 534 MB/s = 98.9 % of spec 540 MB/s (needs ≥ 90 %)'."""
        return (
            f"{self.line.label}: {self.measured} = {float(self.ratio) * 100:.1f} % "
            f"of spec {self.line.spec} (needs {self.needs})"
        )

    def as_dict(self) -> dict[str, object]:
        """A conformance-table row: line, conditions, spec, measured, ratio, verdict."""
        return {
            "id": self.line.id,
            "line": self.line.label,
            "metric": str(self.line.metric),
            "conditions": self.line.conditions(),
            "kind": self.line.kind,
            "tolerance": self.line.tolerance if self.line.kind == "ceiling" else None,
            "spec": self.line.value,
            "measured": self.measured.value,
            "unit": self.line.unit,
            "ratio": float(self.ratio),
            "verdict": "met" if self.met else "not met",
            "message": self.message,
        }


@dataclass(frozen=True)
class SpecCheck:
    """The check of one spec line.

    *measured* is a :class:`Quantity` in any unit of the line's dimension, or a
    bare number taken in the line's own unit.
    """

    line: SpecLine

    def evaluate(self, measured: Quantity | float) -> Verdict:
        """The verdict for *measured*; ValueError when it is not the line's dimension."""
        quantity = (
            measured if isinstance(measured, Quantity) else Quantity(measured, self.line.unit)
        )
        shown = quantity.to(self.line.unit)
        ratio = quantity.base / self.line.spec.base
        ceiling = self.line.kind == "ceiling"
        met = ratio >= exact(self.line.tolerance) if ceiling else ratio <= 1
        return Verdict(self.line, shown, ratio, met)

    def fails(self, measured: Quantity | float) -> str | None:
        """The message when *measured* does not meet the line, else None."""
        verdict = self.evaluate(measured)
        return None if verdict.met else verdict.message


def checks(datasheet: Datasheet) -> dict[str, SpecCheck]:
    """One check per spec line of *datasheet*, by line id, in file order."""
    return {line.id: SpecCheck(line) for line in datasheet.specs}


def failures_first(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """*verdicts* with the lines not met first; each group keeps its order."""
    return sorted(verdicts, key=lambda verdict: verdict.met)
