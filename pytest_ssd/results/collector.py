"""The controller's collector: measurements from every test report into results.json."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from pytest_ssd.db import TestRecords
from pytest_ssd.results.record import (
    DERIVED_PROPERTY,
    PROPERTY,
    SERIES_PROPERTY,
    SPEC_PROPERTY,
    Measurement,
)
from pytest_ssd.session import SsdSession
from pytest_ssd.state.keeper import TRANSITION_PROPERTY, Transition

RECORDED = (PROPERTY, DERIVED_PROPERTY, SPEC_PROPERTY, TRANSITION_PROPERTY, SERIES_PROPERTY)
#: exit statuses after which the run did not go through all its tests
_INCOMPLETE = {pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR}


class RunRecorder:
    """pytest hooks that feed results.json and the database; registered on the controller only.

    ``user_properties`` are cumulative across setup/call/teardown reports, so
    each record is stored the first time any report of its test carries it:
    a test interrupted after measuring keeps what it measured.  What one report
    brings goes to the database in one transaction.
    """

    def __init__(self, session: SsdSession, report_lines: list[str]) -> None:
        assert session.store is not None and session.db is not None
        self.session = session
        self.store = session.store
        self.db = session.db
        self.report_lines = report_lines
        self.outcomes: Counter[str] = Counter()
        self._seen: dict[str, set[str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        records = self._new_records(report)
        for m in records.measurements:
            self.store.add(m)
        for d in records.derived:
            self.store.add_derived(d)
        for v in records.verdicts:
            self.store.add_conformance(v)
        for t in records.transitions:
            self.store.add_transition(t)
        self.db.add(records)
        if report.when == "call" or report.outcome != "passed":
            outcome = _outcome(report)
            self.outcomes[outcome] += 1
            message = report.longreprtext.splitlines()[-1:] if report.failed else []
            self.db.test_done(report.nodeid, outcome, report.duration, "".join(message) or None)

    def _new_records(self, report: pytest.TestReport) -> TestRecords:
        seen = self._seen.setdefault(report.nodeid, set())
        records = TestRecords(report.nodeid)
        for name, value in report.user_properties:
            if name not in RECORDED or not isinstance(value, str) or value in seen:
                continue
            seen.add(value)
            if name == PROPERTY:
                records.measurements.append(Measurement.from_json(value))
            elif name == DERIVED_PROPERTY:
                records.derived.append(json.loads(value))
            elif name == SPEC_PROPERTY:
                records.verdicts.append(json.loads(value))
            elif name == SERIES_PROPERTY:
                records.series.append(self._series(json.loads(value)))
            else:
                records.transitions.append(Transition.from_json(value).as_dict())
        return records

    def _series(self, record: dict[str, Any]) -> dict[str, Any]:
        """A series' arrays, read from the npz file the test wrote into its artifacts."""
        blob = (self.session.run_dir / record["file"]).read_bytes()
        return {**record, "blob": blob}

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        complete = exitstatus not in _INCOMPLETE
        self.store.finish(dict(self.outcomes), complete=complete)
        self.db.finish(dict(self.outcomes), complete=complete)

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
