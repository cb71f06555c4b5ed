"""Metrics derived from measurements, as numpy series: fill drive and cache, speed profile.

Shared by the methods (fio's logs read once for csd's fill drive and WSAT); a method's own
numbers are in its folder (``pytest_ssd/methods/csd/analysis``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: each name's module, loaded when the name is first asked for: numpy with it, so a
#: worker that imports :mod:`pytest_ssd.analysis.repeat` alone never loads numpy
_FILL = ("CacheEstimate", "CacheRule", "FillPass", "FioLog", "IoLog", "estimate_cache")
_FILL_LOGS = ("fill_pass", "log_path", "moving_median", "read_io_log", "read_log", "shrink_log")
_SPEED = ("SelfCheck", "SpeedProfile", "Sustained", "parse_dd", "speed_profile")
_HOMES = {
    **dict.fromkeys(_FILL + _FILL_LOGS, "fill"),
    **dict.fromkeys(_SPEED, "speed"),
}


if not TYPE_CHECKING:  # mypy sees the imports above, and no catch-all attribute

    def __getattr__(name: str) -> Any:
        if name in _HOMES:
            module = importlib.import_module(f"pytest_ssd.analysis.{_HOMES[name]}")
            return getattr(module, name)
        raise AttributeError(f"module 'pytest_ssd.analysis' has no attribute {name!r}")
