"""One measurement: a fio job's workload and what fio measured, as plain data.

Measurements travel from xdist workers to the controller as JSON strings in
``user_properties`` (so junitxml carries them too) and end up in results.json.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

#: the user_properties name that carries a measurement as JSON
PROPERTY = "ssd.measurement"
#: the suite a test belongs to (what its conftest.py declares), on every test of a session
SUITE_PROPERTY = "ssd.suite"
#: the user_properties name that carries derived metrics (SsdBench.derive) as JSON
DERIVED_PROPERTY = "ssd.derived"
#: the user_properties name that carries a datasheet verdict (SsdBench.check_spec) as JSON
SPEC_PROPERTY = "ssd.spec"
#: a datasheet verdict's status, in the order the conformance table lists them
VERDICTS = ("not met", "not judged", "not checked", "met")


def verdict_order(status: str) -> int:
    """Sort key of a conformance row: not met, not judged, not checked, met."""
    return VERDICTS.index(status) if status in VERDICTS else len(VERDICTS)


#: the user_properties name that carries a series (named arrays in an npz file) as JSON
SERIES_PROPERTY = "ssd.series"
#: the percentiles shown as key metrics (table columns, junitxml properties)
KEY_PERCENTILES = (50.0, 99.0, 99.99)


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Measurement:
    """A workload and its metrics per direction (read / write / trim)."""

    test: str
    device: str
    name: str
    workload: dict[str, Any]
    metrics: dict[str, dict[str, Any]]
    start: str
    end: str
    artifacts: str

    def to_json(self) -> str:
        # the fields are JSON already: no deep copy (asdict) for each of a point's jobs
        return json.dumps(vars(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Measurement:
        return cls(**json.loads(text))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def key_metrics(self) -> dict[str, float | None]:
        """Flat metrics for properties and table columns: 'read.iops', 'write.p99_us' ..."""
        flat: dict[str, float | None] = {}
        for direction, data in self.metrics.items():
            flat[f"{direction}.iops"] = data["iops"]
            flat[f"{direction}.bw_mib_s"] = data["bw_mib_s"]
            flat[f"{direction}.lat_mean_us"] = data["lat_mean_us"]
            for p in KEY_PERCENTILES:
                flat[f"{direction}.p{p:g}_us"] = percentile_us(data, p)
        return flat


def percentile_us(direction: dict[str, Any], p: float) -> float | None:
    """The p-th completion-latency percentile in µs, or None when the sample cannot resolve it."""
    clat = direction.get("clat") or {}
    for item in clat.get("percentiles", []):
        if abs(item["p"] - p) < 1e-9:
            return float(item["us"]) if item["resolved"] else None
    return None


@dataclass(frozen=True, kw_only=True)
class Derived:
    """Values a test derived from what it measured (``ssd.derive(name, values)``).

    Its *name* is its kind: what a report section asks for (``ctx.derived(kind)``).
    """

    test: str
    device: str
    name: str
    values: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Derived:
        return cls(**json.loads(text))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class SeriesRecord:
    """Named arrays a test kept (``ssd.series``): an npz file in its artifacts, and its meta."""

    device: str
    name: str
    meta: dict[str, Any]
    #: the npz file, relative to the run folder
    file: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SeriesRecord:
        return cls(**json.loads(text))
