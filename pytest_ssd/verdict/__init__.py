"""Verdicts beyond the datasheet: a build against a baseline build, a check against its noise.
The database is read by :mod:`pytest_ssd.verdict.source` (the controller and the command).

The names below are imported when first asked for: a run without ``--ssd-baseline`` loads
:mod:`.metrics` (the option's help) and nothing else of the verdicts.  The judge of one
point is :func:`pytest_ssd.verdict.judge.judge` (``judge`` here is that module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.lazy import exports

if TYPE_CHECKING:
    from pytest_ssd.verdict.judge import VERDICTS, MetricVerdict, judge_point
    from pytest_ssd.verdict.reference import Baseline
else:  # a module is imported when one of its names is first asked for
    __getattr__ = exports(
        __name__,
        {
            ".reference": ("Baseline",),
            ".judge": ("VERDICTS", "MetricVerdict", "judge_point"),
        },
    )

__all__ = ["VERDICTS", "Baseline", "MetricVerdict", "judge_point"]
