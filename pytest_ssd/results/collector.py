"""The controller's collector: measurements from every test report into results.json."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from pytest_ssd.results.record import DERIVED_PROPERTY, PROPERTY, SPEC_PROPERTY, Measurement
from pytest_ssd.results.store import ResultsStore
from pytest_ssd.state.keeper import TRANSITION_PROPERTY, Transition

RECORDED = (PROPERTY, DERIVED_PROPERTY, SPEC_PROPERTY, TRANSITION_PROPERTY)
#: exit statuses after which the run did not go through all its tests
_INCOMPLETE = {pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR}


class RunRecorder:
    """pytest hooks that feed the results store; registered on the controller only.

    ``user_properties`` are cumulative across setup/call/teardown reports, so
    each measurement is stored the first time any report of its test carries it:
    a test interrupted after measuring keeps what it measured.
    """

    def __init__(self, store: ResultsStore, report_lines: list[str]) -> None:
        self.store = store
        self.report_lines = report_lines
        self.outcomes: Counter[str] = Counter()
        self._seen: dict[str, set[str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        seen = self._seen.setdefault(report.nodeid, set())
        for name, value in report.user_properties:
            if name not in RECORDED or not isinstance(value, str) or value in seen:
                continue
            seen.add(value)
            if name == PROPERTY:
                self.store.add(Measurement.from_json(value))
            elif name == DERIVED_PROPERTY:
                self.store.add_derived(json.loads(value))
            elif name == SPEC_PROPERTY:
                self.store.add_conformance(json.loads(value))
            else:
                self.store.add_transition(Transition.from_json(value).as_dict())
        if report.when == "call" or report.outcome != "passed":
            self.outcomes[_outcome(report)] += 1

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.store.finish(dict(self.outcomes), complete=exitstatus not in _INCOMPLETE)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "pytest-ssd")
        for line in self.report_lines:
            terminalreporter.write_line(line)


def _outcome(report: pytest.TestReport) -> str:
    if report.when != "call" and report.failed:
        return "error"
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome
