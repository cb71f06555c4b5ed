"""A datasheet as typed data: the drive it describes and its spec lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_ssd.fio.job import Pattern, format_bytes
from pytest_ssd.health.profile import HealthProfile
from pytest_ssd.specs.features import Features
from pytest_ssd.specs.units import Dimension, Quantity
from pytest_ssd.state.spec import StateSpec
from pytest_ssd.verdict.tolerance import SheetTolerances

Kind = Literal["ceiling", "bound"]
#: tolerance of a ceiling when neither the line nor the file gives one
DEFAULT_TOLERANCE = 0.90
#: the kind each dimension must use: throughput and IOPS are reached, latency kept under
KIND_OF: dict[Dimension, Kind] = {"throughput": "ceiling", "iops": "ceiling", "latency": "bound"}
#: how a per-TB figure's unit reads: TB is decimal, 10¹² bytes of the drive's capacity
PER_TB = "per TB"
TB = 10**12


@dataclass(frozen=True)
class Metric:
    """What a spec line measures: throughput, IOPS, or latency (mean or a percentile)."""

    dimension: Dimension
    percentile: float | None = None

    def __str__(self) -> str:
        if self.dimension != "latency":
            return self.dimension
        return f"latency-{self.statistic}"

    @property
    def statistic(self) -> str:
        """'mean' or 'p99.99' for latency; empty otherwise."""
        if self.dimension != "latency":
            return ""
        return "mean" if self.percentile is None else f"p{self.percentile:g}"


@dataclass(frozen=True)
class SpecLine:
    """One datasheet figure with the conditions it was measured under."""

    id: str
    metric: Metric
    unit: str
    pattern: Pattern
    read_pct: int
    block_size: int
    qd: int
    jobs: int
    state: StateSpec
    value: float
    kind: Kind
    tolerance: float = DEFAULT_TOLERANCE
    note: str = ""
    #: the figure is per TB (10¹² bytes) of the drive's capacity: one sheet, a product line
    per_tb: bool = False

    @property
    def direction(self) -> str:
        """'read', 'write' or 'mixed'."""
        return {100: "read", 0: "write"}.get(self.read_pct, "mixed")

    @property
    def spec(self) -> Quantity:
        """The datasheet's value with its unit (per TB of capacity when :attr:`per_tb`)."""
        return Quantity(self.value, self.unit)

    @property
    def shown_unit(self) -> str:
        """The line's unit as tables print it: 'kIOPS', or 'kIOPS per TB'."""
        return f"{self.unit} {PER_TB}" if self.per_tb else self.unit

    @property
    def label(self) -> str:
        """How the seeds' tables name the line: 'SEQ read QD8 128KiB', 'RND read QD32×4 4KiB'."""
        direction = self.direction if self.direction != "mixed" else f"{self.read_pct} % read"
        jobs = f"×{self.jobs}" if self.jobs > 1 else ""
        text = (
            f"{self.pattern.upper()} {direction} QD{self.qd}{jobs} {format_bytes(self.block_size)}"
        )
        if self.metric.dimension == "latency":
            text += f" {self.metric.statistic} latency"
        return text

    def conditions(self) -> dict[str, object]:
        """The measurement conditions as plain values."""
        return {
            "pattern": self.pattern,
            "direction": self.direction,
            "read_pct": self.read_pct,
            "block_size": self.block_size,
            "qd": self.qd,
            "jobs": self.jobs,
            "state": str(self.state),
        }

    def as_dict(self) -> dict[str, object]:
        """JSON-able form of the line."""
        return {
            "id": self.id,
            "label": self.label,
            "metric": str(self.metric),
            "unit": self.unit,
            "value": self.value,
            "kind": self.kind,
            "tolerance": self.tolerance,
            "conditions": self.conditions(),
            "note": self.note,
            "per_tb": self.per_tb,
        }


@dataclass(frozen=True)
class Drive:
    """Which drive a datasheet describes.

    ``models`` and ``firmware`` are shell-style globs (``fnmatch``), compared
    case-insensitively; an empty ``firmware`` accepts any firmware.
    ``capacities_gb`` are the sold capacities in decimal GB: one for a drive, several
    for a product line whose sheet gives its figures per TB (``per_tb``).
    """

    name: str
    models: tuple[str, ...]
    capacities_gb: tuple[float, ...]
    firmware: tuple[str, ...] = ()
    form_factor: str = ""
    interface: str = ""

    @property
    def capacity_gb(self) -> float:
        """The (first) sold capacity in decimal GB."""
        return self.capacities_gb[0]


@dataclass(frozen=True)
class Datasheet:
    """A drive and its spec lines, loaded from *path*."""

    path: str
    drive: Drive
    specs: tuple[SpecLine, ...]
    source: str = ""
    #: the ``[health]`` rules of the drive (None: the option's or the default profile)
    health: HealthProfile | None = None
    #: the ``[baseline]`` bands of "same" against a baseline build (None: none set)
    baseline: SheetTolerances | None = None
    #: the ``[features]`` the drive must declare (None: none stated)
    features: Features | None = None

    def line(self, line_id: str) -> SpecLine:
        """The spec line named *line_id*; KeyError naming the known ids otherwise."""
        for spec in self.specs:
            if spec.id == line_id:
                return spec
        known = ", ".join(s.id for s in self.specs)
        raise KeyError(f"{self.path}: no spec line {line_id!r} (lines: {known})")
