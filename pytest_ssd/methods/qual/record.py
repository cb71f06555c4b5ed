"""A qualification test's verdicts: each check recorded (``ssd.derive("qualification",
...)``), the test failed by the first that failed (its one line) or skipped when none was
judged (the first reason)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.verdict.checks import KIND, Check


def settle(ssd: SsdBench, checks: Sequence[Check]) -> None:
    """Record *checks* on the test, then fail, skip or pass it as they say."""
    for check in checks:
        ssd.derive(KIND, check.values())
    failed = [c for c in checks if c.verdict == "fail"]
    if failed:
        pytest.fail(failed[0].detail, pytrace=False)
    if checks and all(c.verdict == "not judged" for c in checks):
        pytest.skip(checks[0].detail)
