"""The fixtures a test of a suite uses (``ssd_session``, ``dut``, ``ssd``) and its report: one
line for pytest-ssd's errors, the run stopped on a changed device or a failing report
folder, the test's figures on its report."""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from pytest_ssd.bench import FIGURES_KEY, BenchEnv, SsdBench, enter_state, leave_state
from pytest_ssd.device.pinned import DeviceChanged
from pytest_ssd.errors import SsdError
from pytest_ssd.plugin.batching import BATCHES_KEY
from pytest_ssd.plugin.collection import SUITE_FLAG
from pytest_ssd.plugin.health import around_state
from pytest_ssd.plugin.skips import skip_before_state
from pytest_ssd.results.files import storage_fault_of
from pytest_ssd.results.record import DERIVED_PROPERTY, Derived
from pytest_ssd.session import SESSION_KEY, Dut, SsdSession
from pytest_ssd.state import plan

#: whether the test's call passed (its state is kept only then)
PASSED_KEY = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when == "call":
        item.stash[PASSED_KEY] = report.passed
    if call.excinfo is not None and call.excinfo.errisinstance(SsdError):
        # our errors are one line that says what and where: no traceback
        report.longrepr = f"{type(call.excinfo.value).__name__}: {call.excinfo.value}"
    if call.excinfo is not None and call.excinfo.errisinstance(DeviceChanged):
        # no test after this one: under xdist the worker stops and tells the controller
        item.session.shouldstop = f"pytest-ssd stopped the run: {call.excinfo.value}"
    fault = storage_fault_of(call.excinfo.value) if call.excinfo is not None else None
    if fault is not None:  # a full or read-only report folder: one line, and the run stops
        report.longrepr = f"{type(fault).__name__}: {fault}"
        item.session.shouldstop = f"pytest-ssd stopped the run: {fault}"
    gone = _device_fault(item) if report.when == "call" else None
    if gone is not None:  # the device dropped off or changed while the test ran: its line
        report.outcome, report.longrepr = "failed", gone[1]
        item.user_properties.append((DERIVED_PROPERTY, stayed(item, *gone).to_json()))
    if report.when == "call":
        extras = [*getattr(report, "extras", []), *item.stash.get(FIGURES_KEY, [])]
        report.extras = extras  # type: ignore[attr-defined]  # pytest-html's attribute
        session = item.config.stash.get(SESSION_KEY, None)
        if session is not None and report.passed:
            from pytest_ssd.plugin import overview  # noqa: PLC0415  # an active run's only

            overview.time_call(session, item, report.duration)


def _device_fault(item: pytest.Item) -> tuple[str, str] | None:
    """The item's device and what the kernel said happened to it, first said on this item."""
    session = item.config.stash.get(SESSION_KEY, None)
    callspec = getattr(item, "callspec", None)
    dut_id = callspec.params.get("dut") if callspec is not None else None
    if session is None or not isinstance(dut_id, str):
        return None
    said = session.device_fault(dut_id)
    return (dut_id, said) if said is not None and session.blame(dut_id, item.nodeid) else None


def stayed(item: pytest.Item, dut_id: str, said: str) -> Derived:
    """The qualification record of device *dut_id*, which dropped off or changed during *item*."""
    values = {"part": "devices", "check": "stayed on the bus", "verdict": "fail", "detail": said}
    return Derived(test=item.nodeid, device=dut_id, name="qualification", values=values)


@pytest.fixture(scope="session")
def ssd_session(pytestconfig: pytest.Config) -> SsdSession:
    """The run: options, run folder, devices."""
    session = pytestconfig.stash.get(SESSION_KEY, None)
    if session is None:
        pytest.fail(
            "pytest-ssd is not active for these tests: give --dut, or set "
            f"{SUITE_FLAG} = True in the suite's conftest.py",
            pytrace=False,
        )
    return session


@pytest.fixture
def dut(request: pytest.FixtureRequest, ssd_session: SsdSession) -> Dut:
    """The device under test (tests using it are parametrized over every ``--dut``).

    A test whose ``ssd_applies`` classes leave the drive out, or whose block size the drive's
    logical block refuses, is skipped here with the reason: before its state is reached.
    """
    device = ssd_session.duts[request.param]
    said = ssd_session.device_fault(device.id)
    if said is not None:  # it dropped off or changed before this test
        pytest.fail(f"refused: {said}", pytrace=False)
    lba_size = device.identity.logical_block_size
    reason = skip_before_state(request.node, device.drive_class, lba_size)
    if reason is not None:
        pytest.skip(reason)
    return device


@pytest.fixture
def ssd(request: pytest.FixtureRequest, ssd_session: SsdSession, dut: Dut) -> Iterator[SsdBench]:
    """Run fio on the test's device and record what it measured: ``ssd.run(job)``.

    With ``@pytest.mark.dut_state(...)`` the device is brought to that state first.
    """
    env = BenchEnv(
        run_dir=ssd_session.run_dir,
        artifacts=ssd_session.artifacts_for(request.node.nodeid),
        profile=ssd_session.profile(dut),
        repeat=ssd_session.options.repeat,
        cv_max=ssd_session.options.cv_max,
        datasheet=ssd_session.datasheets.get(dut.id),
        keeper=lambda: ssd_session.keeper(dut.id),
        kept=lambda: ssd_session.keepers.get(dut.id),
        services=ssd_session.services(dut.id),
        batch=lambda: request.config.stash[BATCHES_KEY].batch(dut.id),
        progress=ssd_session.progress,
    )
    bench = SsdBench(dut, request.node, env)
    batches = request.config.stash[BATCHES_KEY]
    batches.before(request.node, dut.id)  # a test outside the device's batch closes it first
    need = plan.need_of(request.node)

    def reach() -> str | None:
        """The test's state (the one reached, when a transition ran)."""
        if need is None:
            return None
        # a batch's first fio starts while the device gets to the state (0.2 s of start-up)
        start = functools.partial(batches.start, request.node, bench, dut.id)
        try:
            ran = enter_state(bench, need, functools.partial(start, early=True))
        except BaseException:
            batches.abort(dut.id)
            raise
        start()
        return str(need.state) if ran else None

    # the health log before and after the transition; the test's own step ends in its call
    around_state(request.node, ssd_session.health_watch(dut.id), dut.id, reach)
    yield bench
    leave_state(bench, request.node.stash.get(PASSED_KEY, False))
    batches.after(request.node, dut.id)
