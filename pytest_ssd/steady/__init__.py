"""Steady-state detection: the SNIA PTS rule per round, and fio's native per-second rule."""

from __future__ import annotations

from pytest_ssd.steady.fio_native import (
    WDPC_RULE,
    FioSteadyRule,
    FioSteadyState,
    parse_steadystate,
)
from pytest_ssd.steady.snia import (
    SniaRule,
    SniaTracker,
    SniaVerdict,
    SteadyStateError,
    evaluate,
    judge_window,
)

__all__ = [
    "WDPC_RULE",
    "FioSteadyRule",
    "FioSteadyState",
    "SniaRule",
    "SniaTracker",
    "SniaVerdict",
    "SteadyStateError",
    "evaluate",
    "judge_window",
    "parse_steadystate",
]
