"""A resumed run's kept tests: reported as the run recorded them, never run again.

A kept test does not go through pytest's set-up, call and teardown (its ``ssd``
fixture would bring the device to its state): :func:`report_kept` stands in for
pytest's run-test protocol, in the process that runs the test.  Its reports go
where any test's go: with ``-n N`` the worker sends them to the controller as
it sends every report, so the kept set travels to the workers with the devices
(``workerinput``) and each device's worker reports its own kept tests in their
place of the run's order.  The controller counts them in the run's outcome and
writes nothing for them: their records are in the database already.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from itertools import groupby
from typing import TYPE_CHECKING

import pytest

from pytest_ssd.session import SsdSession
from pytest_ssd.session.resume import UNKNOWN_STATE
from pytest_ssd.state.plan import device_of, need_of

if TYPE_CHECKING:  # a resumed run's (the database's module)
    from pytest_ssd.db.unfinished import FinishedTest

#: the user property a kept test's reports carry: the run that recorded it
KEPT_PROPERTY = "ssd_kept"


def kept_test(session: SsdSession | None, nodeid: str) -> FinishedTest | None:
    """The recorded outcome of *nodeid* when the session resumes a run that finished it."""
    if session is None or session.resumed is None:
        return None
    return session.resumed.kept_test(nodeid)


def to_run(session: SsdSession | None, items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """*items* less those kept: what runs (and what the batches are made of)."""
    return [item for item in items if kept_test(session, item.nodeid) is None]


def report_kept(item: pytest.Item, nextitem: pytest.Item | None, test: FinishedTest) -> None:
    """Report *item* as *test* says it ended, in place of pytest's run-test protocol."""
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in _reports(item, test):
        ihook.pytest_runtest_logreport(report=report)
    # what the tests before set up and the next one does not need goes, as after any test
    item.session._setupstate.teardown_exact(nextitem)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _reports(item: pytest.Item, test: FinishedTest) -> Iterator[pytest.TestReport]:
    said = f"kept as recorded before the run was resumed: {test.message or test.outcome}"
    if test.outcome == "error":
        yield _report(item, test, "setup", "failed", said)
    elif test.outcome == "skipped":
        path, line, _ = item.location
        yield _report(item, test, "setup", "skipped", (path, (line or 0) + 1, f"Skipped: {said}"))
    else:
        yield _report(item, test, "setup", "passed", None)
        outcome = {"failed": "failed", "xfailed": "skipped"}.get(test.outcome, "passed")
        call = _report(item, test, "call", outcome, said if outcome == "failed" else None)
        if test.outcome in ("xfailed", "xpassed"):
            call.wasxfail = said  # pytest's own attribute (TestReport takes any)
        yield call
    yield _report(item, test, "teardown", "passed", None)


def _report(
    item: pytest.Item, test: FinishedTest, when: str, outcome: str, longrepr: object
) -> pytest.TestReport:
    now = time.time()
    return pytest.TestReport(
        item.nodeid,
        item.location,
        dict.fromkeys(item.keywords, 1),
        outcome,  # type: ignore[arg-type]  # one of pytest's three
        longrepr,  # type: ignore[arg-type]
        when,  # type: ignore[arg-type]
        duration=test.seconds if when == "call" else 0.0,
        start=now,
        stop=now,
        user_properties=[*test.properties, (KEPT_PROPERTY, "recorded before the run was resumed")],
    )


def _group(item: pytest.Item) -> tuple[str, str]:
    need = need_of(item)
    return (device_of(item) or "", f"{need.state}" if need is not None else "no state")


def plan_lines(session: SsdSession, items: Sequence[pytest.Item]) -> list[str]:
    """What the plan says of a resumed run: each state group kept, redone or to run, and why."""
    resumed = session.resumed
    if resumed is None:
        return []
    specs = zip(session.dut_ids, session.options.duts, strict=True)
    scratch = {dut_id for dut_id, spec in specs if spec.is_scratch}
    lines = [
        f"resuming run {resumed.run_id}: {len(resumed.kept)} test(s) it finished are kept as"
        f" recorded; estimated time saved: {resumed.saved()} (their recorded time, with their"
        " state transitions)"
    ]
    for (dut_id, state), group in groupby(items, key=_group):
        members = list(group)
        done = sum(1 for item in members if resumed.kept_test(item.nodeid) is not None)
        left = len(members) - done
        where = f"  {dut_id} {state:<10}"
        if not left:
            lines.append(f"{where} kept: all {done} test(s) finished")
        elif not done:
            lines.append(f"{where} to run: {left} test(s)")
        elif state == "no state":
            lines.append(f"{where} {done} test(s) kept, {left} to run")
        else:
            lines.append(
                f"{where} redone: cut short after {done} of {len(members)} test(s) (kept);"
                f" its state is reached again from scratch, then {left} test(s) run"
            )
    if any(line for line in lines[1:] if " redone: " in line):
        lines.append(f"  why: {UNKNOWN_STATE}")
    lines += [
        f"  {dut_id}: a scratch device is made anew: every state is reached again on it"
        for dut_id in sorted(scratch)
    ]
    return lines
