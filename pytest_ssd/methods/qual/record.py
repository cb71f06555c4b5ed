"""A qualification test's verdicts: each check recorded (``ssd.derive("qualification",
...)``), the test failed by the first that failed (its one line) or skipped when none was
judged (the first reason)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.verdict.checks import KIND, Check


class Outcome(Protocol):
    """A check's outcome as a part's run gives it: its name, verdict and one line."""

    @property
    def check(self) -> str: ...

    @property
    def verdict(self) -> str: ...

    @property
    def detail(self) -> str: ...


def settle(ssd: SsdBench, part: str, outcomes: Sequence[Outcome]) -> None:
    """Record *outcomes* as checks of *part* on the test, then fail, skip or pass it as they
    say (a verdict or part outside the contract is refused: :class:`Check`)."""
    checks = [Check(part, o.check, o.verdict, o.detail) for o in outcomes]
    for check in checks:
        ssd.derive(KIND, check.values())
    failed = [c for c in checks if c.verdict == "fail"]
    if failed:
        pytest.fail(failed[0].detail, pytrace=False)
    if checks and all(c.verdict == "not judged" for c in checks):
        pytest.skip(checks[0].detail)
