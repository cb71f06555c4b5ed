"""Checking a measurement against a spec line.

A :class:`SpecCheck` is the small object of the style guide: ``fails(measured)``
returns a message that reads like the seeds' tables, or None.  A figure the
sample cannot resolve gets no verdict: it is "not judged", with the reason.  ``evaluate``
gives the whole :class:`Verdict`, whose ``as_dict()`` is a conformance-table row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from pytest_ssd.results.record import verdict_order
from pytest_ssd.specs.measure import Reading
from pytest_ssd.specs.model import PER_TB, TB, Datasheet, SpecLine
from pytest_ssd.specs.units import Quantity, exact, number, unit


@dataclass(frozen=True)
class Verdict:
    """A spec line, what was measured, the ratio measured / spec, and the verdict.

    ``status`` is ``met`` or ``not met``; ``not judged`` when the sample cannot
    resolve the figure (``reason`` says why; ``measured`` and ``ratio`` are then
    None); ``not checked`` when the device has no datasheet line to check.
    """

    line: SpecLine
    measured: Quantity | None
    ratio: Fraction | None
    status: str
    reason: str = ""
    #: a per-TB line: the figure the drive measured (``measured`` is it per TB) ...
    total: Quantity | None = None
    #: ... and the drive's capacity in TB (10¹² bytes)
    capacity_tb: Fraction | None = None

    @property
    def met(self) -> bool:
        return self.status == "met"

    @property
    def judged(self) -> bool:
        return self.status in ("met", "not met")

    @property
    def needs(self) -> str:
        """The pass rule as the message prints it: '≥ 90 %' or '≤ 100 %'."""
        if self.line.kind == "bound":
            return "≤ 100 %"
        return f"≥ {float(exact(self.line.tolerance) * 100):g} %"

    @property
    def message(self) -> str:
        """'SEQ read QD8 128KiB: 534 MB/s = 98.9 % of spec 540 MB/s (needs ≥ 90 %)'.

        A figure not judged: 'QoS read p99.99: not judged: p99.99 needs ≥ 10,000 I/Os, had 247'.
        """
        if self.measured is None or self.ratio is None:
            return f"{self.line.label}: {self.status}: {self.reason}"
        measured = f"{self.measured}"
        if self.total is not None and self.capacity_tb is not None:
            capacity = number(float(self.capacity_tb))
            measured = f"{self.total} on {capacity} TB = {self.measured} {PER_TB}"
        spec = f"{self.line.spec} {PER_TB}" if self.line.per_tb else f"{self.line.spec}"
        return (
            f"{self.line.label}: {measured} = {float(self.ratio) * 100:.1f} % "
            f"of spec {spec} (needs {self.needs})"
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
            "measured": None if self.measured is None else self.measured.value,
            "unit": self.line.unit,
            "ratio": None if self.ratio is None else float(self.ratio),
            "verdict": self.status,
            "reason": self.reason or None,
            "message": self.message,
            "per_tb": self.line.per_tb,
            "measured_total": None if self.total is None else self.total.value,
            "capacity_tb": None if self.capacity_tb is None else float(self.capacity_tb),
        }


@dataclass(frozen=True)
class SpecCheck:
    """The check of one spec line.

    *measured* is a :class:`Reading` (see :func:`~pytest_ssd.specs.measure.measured`)
    or a :class:`Quantity` in any unit of the line's dimension; never a bare
    number, whose unit would be a guess (raw IOPS against a line in kIOPS).
    A ``per_tb`` line needs the drive's *capacity_bytes*: the measured figure is
    divided by the capacity in TB (10¹² bytes) before it is compared.
    """

    line: SpecLine
    capacity_bytes: int | None = None

    def evaluate(self, measured: Reading | Quantity) -> Verdict:
        """The verdict for *measured*; ValueError when it is not the line's dimension."""
        if not isinstance(measured, Reading | Quantity):
            raise TypeError(
                f"spec line {self.line.id!r}: give a Quantity with its unit or the result's"
                f" Reading (specs.measured), not {type(measured).__name__} {measured!r}"
            )
        reading = measured if isinstance(measured, Reading) else Reading(measured)
        if not reading.resolved:
            return Verdict(self.line, None, None, "not judged", reading.why_not(self.line))
        quantity = reading.quantity
        shown, base = quantity.to(self.line.unit), quantity.base
        total, capacity_tb = None, None
        if self.line.per_tb:
            total, capacity_tb = shown, self._capacity_tb()
            base = base / capacity_tb
            shown = Quantity(float(base / unit(self.line.unit).factor), self.line.unit)
        ratio = base / self.line.spec.base
        ceiling = self.line.kind == "ceiling"
        met = ratio >= exact(self.line.tolerance) if ceiling else ratio <= 1
        status = "met" if met else "not met"
        return Verdict(self.line, shown, ratio, status, total=total, capacity_tb=capacity_tb)

    def _capacity_tb(self) -> Fraction:
        if self.capacity_bytes is None or self.capacity_bytes <= 0:
            raise ValueError(f"spec line {self.line.id!r} is per TB: give the drive's capacity")
        return Fraction(self.capacity_bytes, TB)

    def fails(self, measured: Reading | Quantity) -> str | None:
        """The message when *measured* does not meet the line, else None (met or not judged)."""
        verdict = self.evaluate(measured)
        return verdict.message if verdict.status == "not met" else None


def unknown_line(line_id: str, sheet: Datasheet) -> str:
    """The one line for a spec id the datasheet does not have."""
    known = ", ".join(line.id for line in sheet.specs)
    return f"{sheet.path}: no spec line {line_id!r} (its lines: {known})"


def checks(datasheet: Datasheet) -> dict[str, SpecCheck]:
    """One check per spec line of *datasheet*, by line id, in file order."""
    return {line.id: SpecCheck(line) for line in datasheet.specs}


def failures_first(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """*verdicts* with the lines not met first, then not judged; each group keeps its order."""
    return sorted(verdicts, key=lambda verdict: verdict_order(verdict.status))
