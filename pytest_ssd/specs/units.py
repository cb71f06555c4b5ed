"""Units of datasheet values, converted once and exactly.

Every value is brought to a base unit per dimension — bytes per second for
throughput, I/Os per second for IOPS, nanoseconds for latency — through
:class:`fractions.Fraction`, so ``0.09 ms`` is exactly ``90 µs`` and
``500 MB/s`` exactly ``476.837158203125 MiB/s``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Dimension = Literal["throughput", "iops", "latency"]


@dataclass(frozen=True)
class Unit:
    """A unit: its spelling, what it measures, and how many base units one of it is."""

    name: str
    dimension: Dimension
    factor: Fraction


_TABLE: tuple[tuple[str, Dimension, int], ...] = (
    ("B/s", "throughput", 1),
    ("kB/s", "throughput", 10**3),
    ("MB/s", "throughput", 10**6),
    ("GB/s", "throughput", 10**9),
    ("KiB/s", "throughput", 1 << 10),
    ("MiB/s", "throughput", 1 << 20),
    ("GiB/s", "throughput", 1 << 30),
    ("IOPS", "iops", 1),
    ("kIOPS", "iops", 10**3),
    ("ns", "latency", 1),
    ("µs", "latency", 10**3),
    ("ms", "latency", 10**6),
    ("s", "latency", 10**9),
)
UNITS: dict[str, Unit] = {name: Unit(name, dim, Fraction(f)) for name, dim, f in _TABLE}
#: other spellings people type; they name the same units
ALIASES: dict[str, str] = {"us": "µs", "μs": "µs", "k-IOPS": "kIOPS", "KIOPS": "kIOPS"}
#: the unit each dimension is computed in
BASE: dict[Dimension, str] = {"throughput": "B/s", "iops": "IOPS", "latency": "ns"}


def unit(name: str) -> Unit:
    """The unit spelled *name* (aliases such as ``us`` allowed); KeyError with the known ones."""
    found = UNITS.get(ALIASES.get(name, name))
    if found is None:
        raise KeyError(f"unknown unit {name!r}: use one of {', '.join(UNITS)}")
    return found


def exact(value: float | Fraction) -> Fraction:
    """*value* as the decimal it was written as: 0.1 is 1/10, not the nearest binary float."""
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(value)


@dataclass(frozen=True)
class Quantity:
    """A value with its unit: ``Quantity(534, "MB/s")``, ``Quantity(0.09, "ms")``."""

    value: float
    unit: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "unit", unit(self.unit).name)

    @property
    def dimension(self) -> Dimension:
        """What the quantity measures: throughput, iops or latency."""
        return unit(self.unit).dimension

    @property
    def base(self) -> Fraction:
        """The exact value in the dimension's base unit (B/s, IOPS, ns)."""
        return exact(self.value) * unit(self.unit).factor

    def to(self, name: str) -> Quantity:
        """This quantity in unit *name*; ValueError across dimensions (MB/s to µs)."""
        target = unit(name)
        if target.dimension != self.dimension:
            raise ValueError(f"cannot convert {self} ({self.dimension}) to {target.name}")
        return Quantity(float(self.base / target.factor), target.name)

    def __str__(self) -> str:
        return f"{number(self.value)} {self.unit}"


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """*value* in *from_unit* expressed in *to_unit*: ``convert(0.09, "ms", "us") == 90.0``."""
    return Quantity(value, from_unit).to(to_unit).value


def number(value: float) -> str:
    """How a value reads in a table: '80,000', '534', '0.09', '98.93'."""
    if value == round(value) and abs(value) < 1e15:
        return f"{round(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.4g}"
