"""What a run collects, and how: one test per device (and per point, or per spec line of its
datasheet), the markers that say so, the checks that refuse a bad marker, the suite each test
belongs to, and the plan printed before the first test.

Which suite a test belongs to: what the ``conftest.py`` above it declares.
``pytest_ssd_suite = "vendor"`` in a suite's conftest.py names the suite of
every test below it; ``pytest_ssd_suite = True`` (``suites/conftest.py``)
makes each folder below it a suite named after the folder (``suites/csd`` is
``csd``).  Each test carries its suite as the property ``ssd.suite``; the
database keeps it, and the report gives each suite's records to the sections
declared for it, wherever the suite ran from.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ssd.bench import COVERS_MARKER
from pytest_ssd.device.drive_class import APPLIES_HELP
from pytest_ssd.errors import ConfigError, SsdError
from pytest_ssd.plugin.batching import BATCHES_KEY, mark_groups
from pytest_ssd.plugin.points import (
    JOBS_HELP,
    POINTS_HELP,
    WORKLOAD_HELP,
    check_jobs_markers,
    link_datasheet_lines,
    point_params,
)
from pytest_ssd.plugin.skips import BLOCK_HELP, BLOCK_MARKER
from pytest_ssd.results.record import SUITE_PROPERTY
from pytest_ssd.session import SESSION_KEY, SsdSession
from pytest_ssd.state import plan

# the datasheet machinery is loaded by a run with a datasheet (or spec-line tests) only
if TYPE_CHECKING:
    from pytest_ssd.specs.model import Datasheet


#: the argument name a test takes to get one spec line
SPEC_FIXTURE = "spec_line"


def _datasheets(session: SsdSession) -> dict[str, Datasheet]:
    if session.duts:  # the session opened: datasheets are matched to identified devices
        return session.datasheets
    # --collect-only touches no device: the given files, unmatched
    from pytest_ssd.specs.selection import load_given  # noqa: PLC0415

    given = load_given(session.options.datasheets, len(session.dut_ids))
    return {d: given[i if len(given) > 1 else 0] for i, d in enumerate(session.dut_ids) if given}


def spec_params(session: SsdSession) -> list[Any]:
    """``pytest.param(dut, line)`` per spec line, marked with the state the line names."""
    from pytest_ssd.specs.measure import plan as spec_plan  # noqa: PLC0415

    sheets = _datasheets(session)
    params: list[Any] = []
    for dut_id in session.dut_ids:
        sheet = sheets.get(dut_id)
        if sheet is None:
            reason = f"no datasheet for {dut_id}: give --datasheet=FILE or --datasheet-dir=DIR"
            params.append(pytest.param(dut_id, None, id=dut_id, marks=pytest.mark.skip(reason)))
            continue
        for line in sheet.specs:
            marks = (
                pytest.mark.dut_state(str(spec_plan(line).state)),
                getattr(pytest.mark, BLOCK_MARKER)(line.block_size),  # skipped before its state
            )
            params.append(pytest.param(dut_id, line, id=f"{dut_id}-{line.id}", marks=marks))
    return params


#: ``@pytest.mark.ssd_spec("rnd-read-qd32", ...)``: the datasheet lines a test checks
SPEC_MARKER = "ssd_spec"
SPEC_MARKER_HELP = (
    f"{SPEC_MARKER}(*line_ids): the datasheet lines the test checks with ssd.assert_meets_spec;"
    " an id a device's datasheet does not have stops the run at collection"
)


def check_spec_markers(session: SsdSession, items: list[pytest.Item]) -> None:
    """Raise :class:`ConfigError` for a marked line id a device's datasheet does not have."""
    sheets = _datasheets(session)
    for item in items:
        callspec = getattr(item, "callspec", None)
        dut_id = callspec.params.get("dut") if callspec is not None else None
        sheet = sheets.get(dut_id) if isinstance(dut_id, str) else None
        if sheet is None:
            continue
        known = {line.id for line in sheet.specs}
        for marker in item.iter_markers(SPEC_MARKER):
            for line_id in marker.args:
                if line_id not in known:
                    from pytest_ssd.specs.check import unknown_line  # noqa: PLC0415

                    raise ConfigError(f"{item.nodeid}: {unknown_line(str(line_id), sheet)}")


def pytest_configure(config: pytest.Config) -> None:
    """The markers pytest-ssd reads (``pytest --markers``)."""
    config.addinivalue_line("markers", "ssd_writes: the test writes to the device under test")
    config.addinivalue_line("markers", plan.MARKER_HELP)
    config.addinivalue_line("markers", APPLIES_HELP)
    config.addinivalue_line("markers", SPEC_MARKER_HELP)
    config.addinivalue_line("markers", POINTS_HELP)
    config.addinivalue_line("markers", JOBS_HELP)
    config.addinivalue_line("markers", WORKLOAD_HELP)
    config.addinivalue_line("markers", BLOCK_HELP)
    config.addinivalue_line("markers", f"{COVERS_MARKER}(line): set by pytest-ssd")


#: a conftest.py that sets this (a name, or True) makes its folder a pytest-ssd suite
SUITE_FLAG = "pytest_ssd_suite"


def declared(config: pytest.Config) -> dict[Path, str | bool]:
    """conftest folder -> what it declares, for every conftest.py that declares a suite."""
    found: dict[Path, str | bool] = {}
    for plugin in config.pluginmanager.get_plugins():
        flag = getattr(plugin, SUITE_FLAG, None)
        path = getattr(plugin, "__file__", None)
        if path and (flag is True or (isinstance(flag, str) and flag)):
            found[Path(path).resolve().parent] = flag
    return found


def suite_of(path: Path, folders: dict[Path, str | bool]) -> str | None:
    """The suite of the test file at *path*: the nearest declaration above it."""
    below = None
    for folder in path.resolve().parents:
        flag = folders.get(folder)
        if isinstance(flag, str):
            return flag
        if flag is True:
            return (below or folder).name
        below = folder
    return None


def mark_suites(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its suite (property ``ssd.suite``)."""
    folders = declared(config)
    for item in items:
        suite = suite_of(item.path, folders)
        if suite is not None:
            item.user_properties.append((SUITE_PROPERTY, suite))


@pytest.hookimpl(tryfirst=True)  # a test's device first in its id (scheduling.device_of)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    session = metafunc.config.stash.get(SESSION_KEY, None)
    if "dut" not in metafunc.fixturenames or session is None:
        return
    if SPEC_FIXTURE in metafunc.fixturenames:  # one test per device and spec line
        try:
            params = spec_params(session)
        except SsdError as exc:
            raise pytest.UsageError(str(exc)) from None
        metafunc.parametrize(("dut", SPEC_FIXTURE), params, indirect=["dut"])
        return
    try:
        names, params = point_params(session, metafunc.definition)
    except SsdError as exc:
        raise pytest.UsageError(str(exc)) from None
    if names:
        metafunc.parametrize(names, params, indirect=["dut"])
        return
    ids = session.dut_ids
    metafunc.parametrize("dut", ids, ids=ids, indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.stash.get(SESSION_KEY, None) is None:
        return
    try:
        plan.check(items)
        check_spec_markers(config.stash[SESSION_KEY], items)
        check_jobs_markers(items)
        from pytest_ssd.plugin import scheduling  # noqa: PLC0415  # collection's

        scheduling.check_ids(items, config.stash[SESSION_KEY].dut_ids)
    except SsdError as exc:
        raise pytest.UsageError(str(exc)) from None
    plan.order(items)
    mark_suites(config, items)
    from pytest_ssd.plugin import drives  # noqa: PLC0415  # collection's, not every import's

    drives.mark(config.stash[SESSION_KEY], items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Datasheet lines to the points that measure them; print the plan (also --collect-only)."""
    ssd_session = session.config.stash.get(SESSION_KEY, None)
    if ssd_session is None:
        return
    from pytest_ssd.plugin import kept, overview  # noqa: PLC0415  # an active run's only

    try:
        link_datasheet_lines(session.items, SPEC_FIXTURE)  # the items -k and -m kept
        # the kept tests of a resumed run do not run: no batch holds their jobs
        runs = kept.to_run(ssd_session, session.items)
        session.config.stash[BATCHES_KEY].groups = mark_groups(runs)
    except SsdError:  # a bad marker: modifyitems' usage error is already on its way
        return
    if hasattr(session.config, "workerinput"):  # the controller prints the plan
        return
    try:
        lines = overview.plan_lines(ssd_session, runs)
    except SsdError:  # a bad marker: modifyitems' usage error is already on its way
        return
    lines = [*kept.plan_lines(ssd_session, session.items), *lines]  # a resumed run's first
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if lines and reporter is not None:
        reporter.write_sep("-", "pytest-ssd plan")
        for line in lines:
            reporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A test a resumed run finished before is reported as recorded, not run again."""
    session = item.config.stash.get(SESSION_KEY, None)
    if session is None:
        return None
    from pytest_ssd.plugin import kept  # noqa: PLC0415  # an active run's only

    found = kept.kept_test(session, item.nodeid)
    if found is None:
        return None
    kept.report_kept(item, nextitem, found)
    return True
