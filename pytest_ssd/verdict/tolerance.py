"""Which tolerance band judges a metric of a point against the baseline, and where it came from.

A band is set, most specific first:

1. on the command line (``--ssd-baseline-tolerance`` in a run, ``--tolerance`` for
   ``pytest-ssd compare --gate``), per metric;
2. in the datasheet's ``[baseline.workload."GLOB"]`` table whose glob matches the
   point's job name (the first that does): the metric's own key, else its ``default``;
3. in the datasheet's ``[baseline]`` table: the metric's own key, else ``default``;
4. else derived from the runs' own run-to-run spread (see :mod:`pytest_ssd.verdict.judge`).

Values are percent, as on the command line::

    [baseline]
    default = 10
    iops = 5
    "p99.9_us" = 40          # p99.9_us = 40 reads the same (TOML's dotted key)

    [baseline.workload."rnd-*"]
    default = 25
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from pytest_ssd.errors import ConfigError
from pytest_ssd.verdict.metrics import METRICS

#: the key of a table's band for every metric it does not name
DEFAULT = "default"
#: the sub-table of per-workload bands, keyed by a job name or glob
WORKLOAD = "workload"
#: what a band derived from the runs' spread says it came from
DERIVED = "derived from the runs' spread"


def tolerance_problem(value: object) -> str | None:
    """Why *value* is no tolerance in percent (a positive finite number), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number (percent), not {type(value).__name__} {value!r}"
    if not math.isfinite(value) or value <= 0:
        return f"must be a positive number of percent, not {value!r}"
    return None


def parse_tolerance(text: str) -> tuple[str, float]:
    """``p99_us=10`` -> ("p99_us", 0.10); ConfigError naming the metrics otherwise."""
    metric, _, percent = text.partition("=")
    try:
        value: object = float(percent)
    except ValueError:
        value = percent
    if metric not in METRICS or tolerance_problem(value) is not None:
        raise ConfigError(
            f"{text!r}: give METRIC=PERCENT, METRIC one of {', '.join(METRICS)}"
            " and PERCENT a positive number"
        )
    return metric, float(percent) / 100


class ToleranceError(ConfigError):
    """A bad ``[baseline]`` table: the file, the key and what."""

    def __init__(self, origin: str, where: str, problem: str) -> None:
        super().__init__(f"{origin}: {where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class Band:
    """One table's bands (fractions): per metric, and for the metrics it does not name."""

    metrics: dict[str, float] = field(default_factory=dict)
    default: float | None = None

    def pick(self, metric: str) -> tuple[float, str] | None:
        """(the band, the key that set it), or None when this table sets none."""
        if metric in self.metrics:
            return self.metrics[metric], metric
        return None if self.default is None else (self.default, DEFAULT)

    def as_dict(self) -> dict[str, Any]:
        return {"metrics": self.metrics, "default": self.default}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Band:
        return cls(dict(data["metrics"]), data["default"])


@dataclass(frozen=True)
class SheetTolerances:
    """A datasheet's ``[baseline]``: its bands, and per workload glob (in the file's order)."""

    path: str
    band: Band = field(default_factory=Band)
    workloads: tuple[tuple[str, Band], ...] = ()

    def pick(self, point: str, metric: str) -> tuple[float, str] | None:
        """(the band, where it was set) for *metric* of the job *point*, or None."""
        for glob, band in self.workloads:
            if fnmatchcase(point, glob):
                found = band.pick(metric)
                if found is not None:
                    return found[0], f'{self.path} [baseline.workload."{glob}"] {found[1]}'
        found = self.band.pick(metric)
        return None if found is None else (found[0], f"{self.path} [baseline] {found[1]}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "band": self.band.as_dict(),
            "workloads": [[glob, band.as_dict()] for glob, band in self.workloads],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SheetTolerances:
        workloads = tuple((glob, Band.from_dict(band)) for glob, band in data["workloads"])
        return cls(data["path"], Band.from_dict(data["band"]), workloads)


@dataclass(frozen=True)
class Tolerances:
    """The bands a comparison is judged with: the command line's, then a datasheet's."""

    given: dict[str, float] = field(default_factory=dict)
    #: the option that gave them, as the verdict says it
    option: str = "--tolerance"
    sheet: SheetTolerances | None = None

    def pick(self, point: str, metric: str) -> tuple[float | None, str]:
        """(the band, where it came from); (None, DERIVED) when nothing sets one."""
        if metric in self.given:
            return self.given[metric], f"{self.option} {metric}"
        found = self.sheet.pick(point, metric) if self.sheet is not None else None
        return found if found is not None else (None, DERIVED)


# --- reading a [baseline] table -------------------------------------------------


def parse_tolerances(raw: object, origin: str) -> SheetTolerances:
    """A datasheet's ``[baseline]`` table; :class:`ToleranceError` on the first bad key."""
    at = "baseline"
    table = _table(raw, at, origin)
    workloads: list[tuple[str, Band]] = []
    if WORKLOAD in table:
        for glob, sub in _table(table[WORKLOAD], f"{at}.{WORKLOAD}", origin).items():
            where = f'{at}.{WORKLOAD}."{glob}"'
            workloads.append((glob, _band(_table(sub, where, origin), where, origin)))
    rest = {k: v for k, v in table.items() if k != WORKLOAD}
    return SheetTolerances(origin, _band(rest, at, origin), tuple(workloads))


def _table(raw: object, where: str, origin: str) -> Mapping[str, Any]:
    if not isinstance(raw, dict):
        raise ToleranceError(origin, where, f"must be a table, not {type(raw).__name__}")
    return raw


def _flat(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML reads ``p99.9_us = 40`` as the table ``p99 = {9_us = 40}``: join such keys back."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}.{key}" if prefix else key
        flat |= _flat(value, name) if isinstance(value, dict) else {name: value}
    return flat


def _band(table: Mapping[str, Any], at: str, origin: str) -> Band:
    metrics: dict[str, float] = {}
    default: float | None = None
    for key, value in _flat(table).items():
        where = f"{at}.{key}"
        if key != DEFAULT and key not in METRICS:
            known = ", ".join((DEFAULT, *METRICS))
            raise ToleranceError(origin, where, f"unknown metric {key!r}: use {known}")
        problem = tolerance_problem(value)
        if problem is not None:
            raise ToleranceError(origin, where, problem)
        if key == DEFAULT:
            default = value / 100
        else:
            metrics[key] = value / 100
    return Band(metrics, default)
