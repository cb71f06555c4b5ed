"""The drive's health as a verdict: a snapshot before and after each state transition and test.

The ``ssd`` fixture reads the log before the device's state is reached (and again
after, when a transition ran); :func:`call` wraps the test's body, reads the log
after it, records each step on the test (derived record ``ssd.health``: the
report's health table) and fails a test that passed with one line per broken rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from pytest_ssd.health.log import HealthLog
from pytest_ssd.health.watch import HEALTH_RECORD, HealthWatch, Step
from pytest_ssd.results.record import DERIVED_PROPERTY, Derived


@dataclass
class TestHealth:
    """A test's watch of its device's health log: the snapshot before, a transition's step."""

    watch: HealthWatch
    dut_id: str
    before: HealthLog | None
    transition: Step | None = None


HEALTH_KEY = pytest.StashKey[TestHealth]()


def around_state(
    item: pytest.Item, watch: HealthWatch, dut_id: str, reach: Callable[[], str | None]
) -> None:
    """Run *reach* (the state transition, if any; it returns the state reached, or None when
    none ran) between two snapshots, and keep the test's snapshot before its body."""
    before = watch.latest()  # the previous test's after, when it left one
    state = reach()
    health = TestHealth(watch, dut_id, before)
    if state is not None and before is not None:
        health.transition = watch.step(f"state transition to {state}", before)
        health.before = health.transition.after if health.transition else None
    item.stash[HEALTH_KEY] = health


def after_test(item: pytest.Item) -> str | None:
    """Read the log after the test, record the steps; the one line of broken rules, or None."""
    health = item.stash.get(HEALTH_KEY, None)
    if health is None:
        return None
    steps = [health.transition, health.watch.step("test", health.before)]
    broken: list[str] = []
    for step in steps:
        if step is None:
            continue
        values = step.as_dict()
        record = Derived(test=item.nodeid, device=health.dut_id, name=HEALTH_RECORD, values=values)
        item.user_properties.append((DERIVED_PROPERTY, record.to_json()))
        where = "" if step.what == "test" else f" in the {step.what}"
        broken += [f"health{where}: {line}" for line in step.broken]
    error = health.watch.unsaid_error()
    if error is not None:  # once: the rules are not judged from here on
        values = {"step": "health log unreadable", "error": error, "broken": [], "changed": {}}
        record = Derived(test=item.nodeid, device=health.dut_id, name=HEALTH_RECORD, values=values)
        item.user_properties.append((DERIVED_PROPERTY, record.to_json()))
    return "; ".join(broken) or None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    """A test that passed fails when it broke a health rule; one that failed keeps its failure
    (the broken rules are in the report's health table)."""
    try:
        result = yield
    except BaseException:
        after_test(item)
        raise
    broken = after_test(item)
    if broken is not None:
        pytest.fail(broken, pytrace=False)
    return result
