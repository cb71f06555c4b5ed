"""Verdicts beyond the datasheet: a build against a baseline build, a check against its noise.
The database is read by :mod:`pytest_ssd.verdict.source` (the controller and the command).
"""

from __future__ import annotations

from pytest_ssd.verdict.baseline import Baseline
from pytest_ssd.verdict.judge import VERDICTS, MetricVerdict, judge, judge_point

__all__ = ["VERDICTS", "Baseline", "MetricVerdict", "judge", "judge_point"]
