"""The controller's collector: measurements from every test report into results.json."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from pytest_ssd.db import TestDone, TestRecords
from pytest_ssd.errors import DeviceError, SsdError, present
from pytest_ssd.results.files import STORAGE_ERRNOS, StorageError
from pytest_ssd.results.record import (
    DERIVED_PROPERTY,
    PROPERTY,
    SERIES_PROPERTY,
    SPEC_PROPERTY,
    SUITE_PROPERTY,
    Derived,
    Measurement,
    SeriesRecord,
)
from pytest_ssd.results.transition import TRANSITION_PROPERTY, Transition
from pytest_ssd.session import SsdSession
from pytest_ssd.session.resume import keep_properties

RECORDED = (PROPERTY, DERIVED_PROPERTY, SPEC_PROPERTY, TRANSITION_PROPERTY, SERIES_PROPERTY)
#: exit statuses after which the run did not go through all its tests
_INCOMPLETE = {pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR}


class RunRecorder:
    """pytest hooks that feed results.json and the database; registered on the controller only.

    ``user_properties`` are cumulative across setup/call/teardown reports, so
    each record is stored the first time any report of its test carries it:
    a test interrupted after measuring keeps what it measured.  What one report
    brings goes to the database in one transaction.

    A record that cannot be stored (full or read-only filesystem, damaged
    database) stops the run the way ``-x`` does: the test running finishes, fio
    and the devices are released as after any run, and nothing more is written
    to the file that failed, so what it holds stays as last written.  A test that
    failed as its test host's connection ended stops the run the same way, its
    outcome not recorded: the run resumed (``--ssd-resume``) runs it again.
    """

    def __init__(self, session: SsdSession, report_lines: list[str]) -> None:
        self.session = session
        self.store = present(session.store, "the results store")
        self.db = present(session.db, "the database writer")
        self.report_lines = report_lines
        self.outcomes: Counter[str] = Counter()
        self._seen: dict[str, set[str]] = {}
        #: how many properties each decided test had when they were last kept
        self._properties: dict[str, int] = {}
        self._pytest_session: pytest.Session | None = None
        #: the one line of the storage fault that stopped the run
        self.fault: str | None = None
        #: where it happened: "store" (results.json) or "db"
        self._broken: set[str] = set()
        #: True while a batch of point tests runs: results.json waits for :meth:`export_due`
        self.defer_export: Callable[[], bool] = lambda: False
        #: a test ended since results.json was last brought up to date
        self._due = False
        #: faults as the run finished, when there was nothing left to stop: shown in the summary
        self.late: list[str] = []
        #: pytest was interrupted (Ctrl-C, SIGTERM ...): the run is cut short, whatever
        #: exit status pytest ends with (a second Ctrl-C inside its report of the first made it 0)
        self.interrupted = False
        #: the controller heard a signal that stops the run (:mod:`.interrupts`)
        self.signalled: Callable[[], bool] = lambda: False

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._pytest_session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.fault is not None:  # the run is stopping: nothing more is recorded
            return
        lost = self.session.lost_host(report.longreprtext) if report.failed else None
        if lost is not None:
            self._stop(DeviceError(self._cut_short(report.nodeid, lost)))
            return
        try:
            self._record(report)
        except SsdError as exc:
            self._stop(exc)

    def _record(self, report: pytest.TestReport) -> None:
        decided = report.when == "call" or report.outcome != "passed"
        resumed = self.session.resumed
        if resumed is not None and resumed.kept_test(report.nodeid) is not None:
            # a test the resumed run finished before: counted, its records are there already
            self.outcomes[_outcome(report)] += int(decided)
            return
        records = self._new_records(report)
        # the properties first: a cut between the two leaves them for a test that runs again
        # (its later line wins), never a kept test without them (its junit identity)
        self._keep_properties(report, decided)
        with self._sink("db"):
            if decided:
                outcome = _outcome(report)
                self.outcomes[outcome] += 1
                message = report.longreprtext.splitlines()[-1:] if report.failed else []
                suite = next(
                    (str(v) for k, v in report.user_properties if k == SUITE_PROPERTY), None
                )
                records.done = TestDone(
                    report.nodeid, outcome, report.duration, "".join(message) or None, suite
                )
            self.db.add(records)  # the records and the outcome: one transaction
        if report.when == "teardown":
            self._due = True
            if not self.defer_export():
                self._export()

    def _keep_properties(self, report: pytest.TestReport, decided: bool) -> None:
        """A test's properties in the run folder just before its outcome is committed (a
        resumed run's kept test carries them again); again at teardown if they grew
        meanwhile."""
        count = len(report.user_properties)
        if decided or count > self._properties.get(report.nodeid, count):
            with self._sink("store"):
                keep_properties(self.session.run_dir, report.nodeid, report.user_properties)
            self._properties[report.nodeid] = count

    def export_due(self) -> None:
        """Bring results.json up to date if a test ended since (a batch calls this meanwhile).

        A batch runs it while a point's fio exits (its libaio teardown and its last
        poll: about 0.05 s of waiting), not between two point tests.
        """
        if self.fault is not None:
            return
        try:
            self._export()
        except SsdError as exc:
            self._stop(exc)

    def _export(self) -> None:
        if self._due and "store" not in self._broken:
            self._due = False
            with self._sink("store"):  # results.json follows the database, while that is cheap
                self.store.checkpoint()

    @contextlib.contextmanager
    def _sink(self, name: str) -> Iterator[None]:
        """Remember which file failed, so that it is not written again."""
        try:
            yield
        except SsdError:
            self._broken.add(name)
            raise

    def _stop(self, exc: SsdError) -> None:
        """Stop the run after the test running now (as ``-x``), with *exc* as its one line."""
        self.fault = f"pytest-ssd stopped the run: {exc}"
        if self._pytest_session is not None:
            self._pytest_session.shouldstop = self.fault
            # under xdist the controller's loop stops on its own flag, not the session's
            plugins = self._pytest_session.config.pluginmanager
            dsession = plugins.get_plugin("dsession")
            if dsession is not None:
                dsession.shouldstop = self.fault

    def _cut_short(self, nodeid: str, lost: str) -> str:
        """A test failed as its host went away: no outcome is recorded for it, so the run
        resumed (``--ssd-resume``) forgets what it wrote and runs it again."""
        test = nodeid.rpartition("::")[2]
        return (
            f"{lost} during {test} (not recorded); resume the run once the host is back:"
            f" --ssd-resume={self.session.run_id}"
        )

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
                records.derived.append(Derived.from_json(value))
            elif name == SPEC_PROPERTY:
                records.verdicts.append(json.loads(value))
            elif name == SERIES_PROPERTY:
                series = SeriesRecord.from_json(value)
                records.series.append((series, self._arrays(series)))
            else:
                records.transitions.append(Transition.from_json(value))
        return records

    def _arrays(self, series: SeriesRecord) -> bytes:
        """A series' arrays: the npz file the test wrote into its artifacts."""
        path = self.session.run_dir / series.file
        try:
            return path.read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc.strerror}: check that folder") from None

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self) -> None:
        self.interrupted = True

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Mark the run finished in each file that still works; never raise from here.

        Complete only when no interrupt, stop or storage fault cut it short.
        """
        cut = self.interrupted or self.signalled() or self.fault is not None
        complete = exitstatus not in _INCOMPLETE and not cut
        outcomes = dict(self.outcomes)
        failed: list[str] = []
        if "db" in self._broken:
            self.db.close()
        else:
            try:
                self.db.finish(outcomes, complete=complete)
            except SsdError as exc:
                failed.append(str(exc))
        if "store" not in self._broken:  # the final results.json, from the database
            try:
                self.store.write()
            except SsdError as exc:
                failed.append(str(exc))
        if self.fault is None:  # else the stop's line has said it: the same cause, no news
            self.late.extend(failed)

    # pytest takes only names that start with pytest_: specname says which hook it is
    @pytest.hookimpl(wrapper=True, trylast=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_report_files(
        self, session: pytest.Session
    ) -> Generator[None, None, None]:
        """report.html comes last (pytest-html): a full or read-only folder is one line too.

        Innermost of the wrappers, so the terminal summary still shows it; the
        report can be made again from the database with ``pytest-ssd report``.
        """
        try:
            return (yield)
        except OSError as exc:
            if exc.errno not in STORAGE_ERRNOS:
                raise
            self.late.append(
                f"cannot write the report into {self.session.run_dir}: {exc.strerror}: free"
                f" space there, then rebuild it with 'pytest-ssd report {self.session.run_id}'"
            )
            return None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "pytest-ssd")
        for line in self.report_lines:
            terminalreporter.write_line(line)
        for line in self.late:
            terminalreporter.write_line(f"ERROR: pytest-ssd: {line}", red=True)
        for line in self.db.notes:  # the lab's database was away: where the run is instead
            terminalreporter.write_line(f"WARNING: pytest-ssd: {line}", yellow=True)
        for line in skip_lines(terminalreporter):
            terminalreporter.write_line(line, yellow=True)


#: distinct skip reasons shown in pytest-ssd's summary; -rs lists every one
SKIP_REASONS_SHOWN = 8


def skip_lines(terminalreporter: Any) -> list[str]:
    """Why tests were skipped, one line per reason, unless -rs (or -ra) lists them already.

    A whole suite skipped (no datasheet given, a read-only run) must not pass as
    "1 skipped" with no word of why.
    """
    if any(char in getattr(terminalreporter, "reportchars", "") for char in "sSaA"):
        return []
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", ()):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3 and not hasattr(report, "wasxfail"):
            reasons[str(longrepr[2]).removeprefix("Skipped: ")] += 1
    lines = [f"skipped {count}: {reason}" for reason, count in reasons.most_common()]
    if len(lines) > SKIP_REASONS_SHOWN:
        more = len(lines) - SKIP_REASONS_SHOWN
        lines = [*lines[:SKIP_REASONS_SHOWN], f"skipped: {more} more reasons (-rs lists them)"]
    return lines


def _outcome(report: pytest.TestReport) -> str:
    if report.when != "call" and report.failed:
        return "error"
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome
