"""A cross-check of two measurements of one thing, judged against their own noise.

Two tools (fio and dd, say) measure the same speed in turns, a few samples each.
A check of that kind fails only when the two sides' samples separate beyond the
tolerance; when either side's own spread is wider than the gap between them, the
host's noise decides and the check is **not judged**: it says so with the spreads,
never passing or failing on noise.

- **agrees**: the medians lie within the tolerance factor of each other;
- **not judged: noise**: they do not, but a side's spread (its max / min) is wider
  than the gap (the ratio of the medians), or the closest samples of the two sides
  lie within the factor;
- **disagrees**: every sample of one side lies beyond the factor from every sample
  of the other, and neither side's spread is as wide as the gap.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

AGREES, NOISE, DISAGREES = "agrees", "not judged: noise", "disagrees"


@dataclass(frozen=True)
class Side:
    """One tool's samples (a speed each, any one unit)."""

    name: str
    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """max / min: 1 when every sample is the same."""
        return max(self.samples) / min(self.samples)

    def text(self, unit: str) -> str:
        low, high = min(self.samples), max(self.samples)
        return f"{self.name} {self.median:,.0f} {unit} ({low:,.0f}–{high:,.0f}, ×{self.spread:.2f})"


@dataclass(frozen=True)
class CrossCheck:
    """Two sides' samples and the factor they may lie apart (see the module docstring)."""

    a: Side
    b: Side
    factor: float
    unit: str = "MiB/s"
    #: the verdicts, for a suite that imports the class alone
    AGREES: ClassVar[str] = AGREES
    NOISE: ClassVar[str] = NOISE
    DISAGREES: ClassVar[str] = DISAGREES

    def __post_init__(self) -> None:
        for side in (self.a, self.b):
            if not side.samples or min(side.samples) <= 0:
                raise ValueError(f"{side.name}: a cross-check needs positive samples")

    @property
    def ratio(self) -> float:
        """b / a, of the medians."""
        return self.b.median / self.a.median

    @property
    def gap(self) -> float:
        """How far apart the medians are, as a factor >= 1."""
        return max(self.ratio, 1 / self.ratio)

    @property
    def separation(self) -> float:
        """How far apart the closest samples of the two sides are (1: they overlap)."""
        a, b = self.a.samples, self.b.samples
        return max(min(b) / max(a), min(a) / max(b), 1.0)

    @property
    def verdict(self) -> str:
        if self.gap <= self.factor:
            return AGREES
        if max(self.a.spread, self.b.spread) >= self.gap or self.separation <= self.factor:
            return NOISE
        return DISAGREES

    def line(self) -> str:
        """One line: the verdict, both sides with their spreads, the ratio and the factor."""
        sides = f"{self.b.text(self.unit)}, {self.a.text(self.unit)}"
        ratio = f"{self.b.name} / {self.a.name} {self.ratio:.2f}"
        if self.verdict == AGREES:
            return f"{AGREES}: {sides}: {ratio}, within a factor of {self.factor:g}"
        if self.verdict == NOISE:
            apart = (
                "the two sides' samples overlap"
                if self.separation <= 1
                else f"their closest samples lie only ×{self.separation:.2f} apart"
            )
            return (
                f"{NOISE}: {sides}: {ratio} is beyond a factor of {self.factor:g}, but a"
                f" side's own spread is ×{max(self.a.spread, self.b.spread):.2f} and {apart}"
            )
        return (
            f"{DISAGREES}: {sides}: {ratio}; every sample lies beyond a factor of"
            f" {self.factor:g} from the other side's (closest ×{self.separation:.2f})"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "factor": self.factor,
            "ratio": self.ratio,
            "separation": self.separation,
            f"{self.a.name}_samples": list(self.a.samples),
            f"{self.b.name}_samples": list(self.b.samples),
            f"{self.a.name}_spread": self.a.spread,
            f"{self.b.name}_spread": self.b.spread,
        }


def cross_check(
    a: tuple[str, Sequence[float]], b: tuple[str, Sequence[float]], factor: float
) -> CrossCheck:
    """``cross_check(("fio", fio_mib_s), ("dd", dd_mib_s), 1.5)``."""
    return CrossCheck(Side(a[0], tuple(a[1])), Side(b[0], tuple(b[1])), factor)
