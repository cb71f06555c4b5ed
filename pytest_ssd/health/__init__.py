"""Device temperature and health, sampled in the background while fio runs (METHOD §9)."""

from __future__ import annotations

from pytest_ssd.health.sampler import Sampler, summarize
from pytest_ssd.health.sources import (
    HealthSample,
    Source,
    find_source,
    parse_smart_log,
    parse_smartctl,
)

__all__ = [
    "HealthSample",
    "Sampler",
    "Source",
    "find_source",
    "parse_smart_log",
    "parse_smartctl",
    "summarize",
]
