"""Metrics derived from measurements, as numpy series: fill drive and cache, speed profile."""

from __future__ import annotations

from pytest_ssd.analysis.fill import (
    CacheEstimate,
    CacheRule,
    FillPass,
    FioLog,
    IoLog,
    estimate_cache,
    fill_pass,
    log_path,
    moving_median,
    read_io_log,
    read_log,
    shrink_log,
)
from pytest_ssd.analysis.speed import (
    SelfCheck,
    SpeedProfile,
    Sustained,
    parse_dd,
    speed_profile,
)

__all__ = [
    "CacheEstimate",
    "CacheRule",
    "FillPass",
    "FioLog",
    "IoLog",
    "SelfCheck",
    "SpeedProfile",
    "Sustained",
    "estimate_cache",
    "fill_pass",
    "log_path",
    "moving_median",
    "parse_dd",
    "read_io_log",
    "read_log",
    "shrink_log",
    "speed_profile",
]
