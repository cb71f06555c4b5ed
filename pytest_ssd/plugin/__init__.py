"""pytest-ssd's pytest plugin: options, markers, hook wiring and fixtures.

Run state lives in :class:`pytest_ssd.session.SsdSession` (``config.stash``);
the report lives in :mod:`pytest_ssd.report`.
"""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd import newhooks
from pytest_ssd.bench import (
    COVERS_MARKER,
    FIGURES_KEY,
    BenchEnv,
    SsdBench,
    enter_state,
    leave_state,
)
from pytest_ssd.device.drive_class import APPLIES_HELP, CLASS_NAMES, dut_class
from pytest_ssd.device.dut import dut_spec
from pytest_ssd.device.pinned import DeviceChanged
from pytest_ssd.errors import ExtensionInterrupt, SsdError, present
from pytest_ssd.extensions import Extensions, from_hooks
from pytest_ssd.plugin import baseline, health, resume, suites
from pytest_ssd.plugin.batching import Batches, mark_groups
from pytest_ssd.plugin.health import around_state
from pytest_ssd.plugin.options import from_config
from pytest_ssd.plugin.overview import plan_lines, time_call
from pytest_ssd.plugin.params import (
    SPEC_FIXTURE,
    SPEC_MARKER_HELP,
    check_spec_markers,
    spec_params,
)
from pytest_ssd.plugin.points import (
    JOBS_HELP,
    POINTS_HELP,
    WORKLOAD_HELP,
    check_jobs_markers,
    link_datasheet_lines,
    point_params,
)
from pytest_ssd.plugin.skips import BLOCK_HELP, skip_before_state
from pytest_ssd.plugin.suites import SUITE_FLAG
from pytest_ssd.plugin.workers import PLUGIN as WORKERS_START
from pytest_ssd.plugin.workers import WorkersStart, refusal
from pytest_ssd.proc.runner import die_with_parent
from pytest_ssd.purge import PurgeMethod
from pytest_ssd.results import junit
from pytest_ssd.results.files import storage_fault_of
from pytest_ssd.results.location import DB_OPTION, INI_OPTION
from pytest_ssd.secret import masked
from pytest_ssd.session import SESSION_KEY, WORKERINPUT_KEY, Dut, SsdSession
from pytest_ssd.session.handoff import wait_for
from pytest_ssd.session.resume import resume_option, run_id_option
from pytest_ssd.state import plan
from pytest_ssd.state.profile import PROFILE_NAMES, idle_option
from pytest_ssd.state.progress import terminal_writer
from pytest_ssd.state.relay import Relay, worker_writer
from pytest_ssd.text import name_problem

# the method drivers check what fio did with asserts, as tests do: pytest rewrites them too
# (a failed check names its values); everything else in pytest_ssd raises SsdError instead
pytest.register_assert_rewrite("pytest_ssd.methods")

PASSED_KEY = pytest.StashKey[bool]()
#: the fio batches of point tests (one per device at a time)
BATCHES_KEY = pytest.StashKey[Batches]()
RELAY_KEY = pytest.StashKey[Relay]()
#: the controller's signal handlers (plugin.interrupts.Interrupts, imported where installed)
INTERRUPTS_KEY = pytest.StashKey[Any]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """pytest-ssd's own hooks (:mod:`pytest_ssd.newhooks`)."""
    pluginmanager.add_hookspecs(newhooks)


def extensions(config: pytest.Config) -> Extensions:
    """What suites and plugins add through the hooks, for the session.

    A conftest.py or plugin whose hook raises or returns the wrong thing refuses the run
    in one line naming it, before anything is made.
    """
    try:
        return from_hooks(config.hook)
    except SsdError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_OPTION,
        "pytest-ssd's report folder, relative to this file (default: reports);"
        " pytest-ssd (the command) finds the database the same way",
    )
    parser.addini(
        DB_OPTION,
        "pytest-ssd's results database: a file (relative to this file), sqlite:///FILE or"
        " postgresql://USER@HOST/DATABASE (default: results.sqlite in the report folder)",
    )
    parser.addini(junit.INI_LAYOUT, junit.INI_HELP, default=junit.LAYOUTS[0])
    for name, title, add in OPTION_GROUPS:
        add(parser.getgroup(name, title))


def _device_options(group: pytest.OptionGroup) -> None:
    """Device and safety: what is measured and what may be written."""
    group.addoption(
        "--dut",
        dest="ssd_dut",
        action="append",
        type=dut_spec,
        metavar="DEVICE",
        help="device under test: a block device (/dev/nvme0n1), a file, a test host's device"
        " (ssh://[USER@]HOST[:PORT]/dev/nvme0n1) or scratch[:SIZE] (default: scratch:2G, a loop"
        " device on a sparse file: its numbers describe no SSD); may repeat",
    )
    group.addoption(
        "--ssd-confirm",
        dest="ssd_confirm",
        action="append",
        metavar="SERIAL",
        help="allow writes to the device with this serial (or path, for devices without one);"
        " may repeat",
    )
    group.addoption(
        "--ssd-readonly",
        dest="ssd_readonly",
        action="store_true",
        help="never write: run read tests with fio --readonly and skip the rest",
    )
    group.addoption(
        "--dut-class",
        dest="ssd_class",
        action="append",
        type=dut_class,
        metavar="{" + ",".join(CLASS_NAMES) + "}",
        help="the drive's class, which decides the suites that apply (one per --dut, in order;"
        " default: guessed from model and capacity, shown in the report)",
    )
    group.addoption(
        "--ssd-purge",
        dest="ssd_purge",
        default=None,
        type=_purge_method,
        metavar="NAME",
        help="purge with this method instead of the strongest the device supports: "
        + ", ".join(m.value for m in PurgeMethod)
        + " (or one a plugin adds)",
    )


def _method_options(group: pytest.OptionGroup) -> None:
    """Method: how it is measured."""
    group.addoption(
        "--ssd-profile",
        dest="ssd_profile",
        default=None,
        type=_profile,
        metavar="{" + ",".join(PROFILE_NAMES) + "}",
        help="full: the method verbatim; quick: the same steps scaled down (durations / 300,"
        " states on the first 16 GiB). Default: quick on scratch devices, full on real ones",
    )
    group.addoption(
        "--ssd-idle",
        dest="ssd_idle",
        action="append",
        type=idle_option,
        metavar="NAME=SECONDS",
        help="set one of the method's idle periods (full-profile seconds; quick divides them):"
        " after-purge (900), between-steps (300), fill-gap (300), between-tests (60); may repeat",
    )
    group.addoption(
        "--ssd-repeat",
        dest="ssd_repeat",
        default=1,
        type=_repeat,
        metavar="N",
        help="run every measurement N times (reads ramp + measure each time; writes"
        " trim, precondition, cool down, ramp, measure) and report mean, sd, CV, min, max and"
        " the trimmed mean",
    )
    group.addoption(
        "--ssd-cv-max",
        dest="ssd_cv_max",
        default=5.0,
        type=_percent,
        metavar="PERCENT",
        help="flag a repeated measurement unstable above this coefficient of variation (5)",
    )
    group.addoption(
        "--ssd-health-interval",
        dest="ssd_health_interval",
        default=1.0,
        type=_seconds,
        metavar="SECONDS",
        help="read the device's temperature and health every SECONDS while fio runs"
        " (nvme smart-log, hwmon or smartctl; 0: never; default 1)",
    )
    group.addoption(
        "--ssd-health-profile",
        dest="ssd_health_profile",
        default=None,
        metavar="FILE",
        help="health rules (a TOML [health] table) checked before and after each test and"
        " state transition (default: the datasheet's [health], else pytest-ssd's default)",
    )
    group.addoption(
        "--ssd-no-batch",
        dest="ssd_no_batch",
        action="store_true",
        help="run every point of a sweep in a fio process of its own (default: consecutive"
        " points share one, each job released by its test)",
    )
    group.addoption(
        "--ssd-tune",
        dest="ssd_tune",
        action="store_true",
        help="set the host for measuring during the session (governor performance, boost off,"
        " THP never, ASLR 0, scheduler none, NVMe APST off) and restore them afterwards;"
        " also on test hosts",
    )
    group.addoption(
        "--datasheet",
        dest="ssd_datasheet",
        action="append",
        metavar="FILE",
        help="check measurements against this TOML datasheet (one for all devices, or one per"
        " --dut in order); the drive it names must match unless --datasheet-force",
    )
    group.addoption(
        "--datasheet-dir",
        dest="ssd_datasheet_dir",
        action="append",
        metavar="DIR",
        help="look for a matching datasheet here (may repeat; the shipped datasheets/ last)",
    )
    group.addoption(
        "--datasheet-force",
        dest="ssd_datasheet_force",
        action="store_true",
        help="use --datasheet files even when their drive does not match the device",
    )


def _output_options(group: pytest.OptionGroup) -> None:
    """Output: where results go."""
    group.addoption(
        "--ssd-report-dir",
        dest="ssd_report_dir",
        default=None,
        metavar="DIR",
        help="where run folders (results.json, report.html, artifacts) go (default: the ini"
        " option ssd_report_dir, else reports/ beside pytest's configuration file)",
    )
    group.addoption(
        "--ssd-db",
        dest="ssd_db",
        default=None,
        metavar="URL",
        help="the results database every run is added to: a file, sqlite:///FILE or"
        " postgresql://USER@HOST/DATABASE (a lab's server; the run keeps a spool in its folder)"
        " (default: $PYTEST_SSD_DB, the ini option ssd_db, else <report dir>/results.sqlite)",
    )
    group.addoption(
        "--ssd-resume",
        dest="ssd_resume",
        default=None,
        type=resume_option,
        metavar="RUN|last",
        help="continue run RUN (or the last run) that was cut short: in its folder, under its"
        " id; the tests it finished are kept as recorded, the others run (docs/resume.md)",
    )
    group.addoption(
        "--ssd-run-id",
        dest="ssd_run_id",
        default=None,
        type=run_id_option,
        metavar="ID",
        help="the run's id: a new run under ID when the database has none, that run resumed"
        " when it was cut short, refused when it finished (a CI job's retry; docs/resume.md)",
    )


def _comparison_options(group: pytest.OptionGroup) -> None:
    """Comparison: drives side by side."""
    names = (
        (
            "--dut-label",
            "ssd_label",
            "NAME",
            "name the device's results in the database and on graphs (one per --dut, in order;"
            " default: model, capacity and firmware)",
        ),
        (
            "--ssd-build",
            "ssd_build",
            "TEXT",
            "the build under test (a firmware build's name): once for every device, or once"
            " per --dut in order (default: the device's firmware revision, else none: 'unknown"
            " build'); history's x axis, the baseline's verdicts",
        ),
        (
            "--ssd-compare",
            "ssd_compare",
            "LABEL|RUN-ID|all",
            "draw earlier drives from the database on every comparison graph: a label (its"
            " newest run), a run id (all its devices), or all; may repeat",
        ),
    )
    for option, dest, metavar, text in names:  # names people give: one check for them all
        group.addoption(
            option, dest=dest, action="append", type=_label(option), metavar=metavar, help=text
        )
    baseline.add_options(group)


def _hosts_options(group: pytest.OptionGroup) -> None:
    """Test hosts: --dut=ssh://...."""
    group.addoption(
        "--ssd-ssh-config",
        dest="ssd_ssh_config",
        default=None,
        metavar="FILE",
        help="the ssh_config for --dut=ssh://... test hosts (default: ~/.ssh/config)",
    )


#: pytest --help shows the options in these groups, in this order
OPTION_GROUPS: tuple[tuple[str, str, Callable[[pytest.OptionGroup], None]], ...] = (
    ("ssd-device", "pytest-ssd: device and safety", _device_options),
    ("ssd-method", "pytest-ssd: method", _method_options),
    ("ssd-output", "pytest-ssd: output", _output_options),
    ("ssd-comparison", "pytest-ssd: comparison", _comparison_options),
    ("ssd-hosts", "pytest-ssd: test hosts", _hosts_options),
)


def _profile(text: str) -> str:
    if text not in PROFILE_NAMES:
        raise argparse.ArgumentTypeError(f"--ssd-profile must be one of {', '.join(PROFILE_NAMES)}")
    return text


#: --ssd-repeat's ceiling: seed 004 repeats 3 to 10 times; 100 is already days on a real drive
MAX_REPEAT = 100
#: --ssd-health-interval's ceiling: an hour between temperature readings
MAX_HEALTH_INTERVAL_S = 3600.0


def _repeat(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_REPEAT:
        raise argparse.ArgumentTypeError(
            f"--ssd-repeat needs a whole number from 1 to {MAX_REPEAT}, not {text!r}"
        )
    return int(text)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage in (0, 100]")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_HEALTH_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds from 0 to {MAX_HEALTH_INTERVAL_S:g}"
        )
    return value


def _label(option: str) -> Callable[[str], str]:
    """A converter refusing a label that is blank, over 200 characters or holds controls."""

    def convert(text: str) -> str:
        problem = name_problem(text)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{option}={text!r} {problem}")
        return text

    return convert


def _purge_method(text: str) -> str:
    # a name: plugins may add methods (pytest_ssd_purge_methods); the session checks it
    if not text or not all(c.isalnum() or c in "-_." for c in text):
        raise argparse.ArgumentTypeError(f"--ssd-purge={text!r} is not a method name")
    return text


def _active(config: pytest.Config) -> bool:
    """Act only for suites (or when --dut is given): other test runs stay untouched."""
    return bool(config.getoption("ssd_dut")) or bool(suites.declared(config))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _only_informational(config: pytest.Config) -> bool:
    opt = config.option
    return bool(getattr(opt, "help", False) or getattr(opt, "version", False) or opt.collectonly)


def _pin_devices_to_workers(config: pytest.Config) -> None:
    """One device, one worker: pytest-ssd's scheduler keeps each device's tests together
    (:mod:`.scheduling`, :func:`pytest_xdist_make_scheduler`)."""
    dist = getattr(config.option, "dist", "no")
    if dist in ("load", "loadgroup"):
        config.option.dist = "load"
    elif dist != "no":
        raise pytest.UsageError(
            f"pytest-ssd: --dist={dist} could run two tests on one device at once; "
            "use -n N alone (pytest-ssd pins each device to one worker)"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ssd_writes: the test writes to the device under test")
    config.addinivalue_line("markers", plan.MARKER_HELP)
    config.addinivalue_line("markers", APPLIES_HELP)
    config.addinivalue_line("markers", SPEC_MARKER_HELP)
    config.addinivalue_line("markers", POINTS_HELP)
    config.addinivalue_line("markers", JOBS_HELP)
    config.addinivalue_line("markers", WORKLOAD_HELP)
    config.addinivalue_line("markers", BLOCK_HELP)
    config.addinivalue_line("markers", f"{COVERS_MARKER}(line): set by pytest-ssd")
    config.stash[BATCHES_KEY] = Batches(enabled=not config.getoption("ssd_no_batch", False))
    config.pluginmanager.register(health, "ssd-health")
    if getattr(config.option, "help", False) or getattr(config.option, "version", False):
        return
    if _is_worker(config) and WORKERINPUT_KEY in config.workerinput:  # type: ignore[attr-defined]
        data = config.workerinput[WORKERINPUT_KEY]  # type: ignore[attr-defined]
        # a worker whose controller was killed must not go on measuring (and writing)
        die_with_parent(signal.SIGTERM, data.get("controller_pid"))
        try:
            if "handoff" in data:  # the controller is still opening the devices
                data = wait_for(Path(data["handoff"]))
            worker = SsdSession.for_worker(from_config(config), data, extensions(config))
        except SsdError as exc:  # a plugin's hook that answers the controller, not a worker
            raise pytest.UsageError(str(exc)) from None
        worker.progress = worker_writer(worker.run_dir, config.workerinput["workerid"])  # type: ignore[attr-defined]
        config.stash[SESSION_KEY] = worker
        baseline.register(config, worker.run_dir)
        return
    if _is_worker(config) or not _active(config):
        return
    try:
        _configure_controller(config)
    except ExtensionInterrupt as exc:  # pytest's terminal, not configured yet, would say nothing
        sys.stderr.write(f"pytest-ssd: {exc}\n")
        raise


def _configure_controller(config: pytest.Config) -> None:
    """The controller's session, report, results store and host record."""
    # imported here, not at the top: a worker never loads the report, figures or db writer
    from pytest_ssd.plugin import controller, shape  # noqa: PLC0415
    from pytest_ssd.plugin.interrupts import Interrupts  # noqa: PLC0415

    config.pluginmanager.register(controller.builtin_sections, "ssd-builtin-sections")
    layout = controller.check_layout(config)
    try:
        # a run recorded before runs kept their shape: its command line, read as this one
        argv_shape = functools.partial(shape.argv_shape, config)
        session = SsdSession.for_controller(from_config(config), extensions(config), argv_shape)
    except SsdError as exc:  # --ssd-resume of a run that cannot be resumed: nothing made yet
        raise pytest.UsageError(str(exc)) from None
    session.progress = terminal_writer(config)
    config.stash[SESSION_KEY] = session
    if _only_informational(config):
        if config.option.collectonly:
            from pytest_ssd.device.naming import UNOPENED  # noqa: PLC0415  # collect-only's

            session.warnings.append(UNOPENED)
        return
    _pin_devices_to_workers(config)
    judged_against = baseline.prepare(config, session)  # a refusal before anything is made
    interrupts = Interrupts()  # a kill, a closed terminal or ssh, Ctrl-C: once, then a line
    interrupts.install()
    config.stash[INTERRUPTS_KEY] = interrupts
    args = list(config.invocation_params.args)
    distributed = bool(getattr(config.option, "numprocesses", None))
    try:
        if distributed:
            session.prepare()
        else:
            session.open(args)
    except SsdError as exc:
        raise refusal(session, exc) from None
    if not config.getoption("htmlpath", None):
        config.option.htmlpath = str(session.run_dir / "report.html")
        config.option.self_contained_html = True
    page = Path(config.option.htmlpath).resolve()
    config.pluginmanager.register(controller.HtmlReport(session, page), "ssd-html-report")
    config.pluginmanager.register(controller.Plots(), "ssd-plots")
    if config.getoption("xmlpath", None):
        junit = controller.JunitProperties(layout, session)
        config.pluginmanager.register(junit, "ssd-junit")

    if distributed:  # the devices open while xdist starts the workers
        started = functools.partial(_record, config, session, judged_against)
        config.pluginmanager.register(WorkersStart(config, session, args, started), WORKERS_START)
    else:
        _record(config, session, judged_against)


def _record(config: pytest.Config, session: SsdSession, judged_against: Any) -> None:
    """What records the run once it has started (under -n: once the workers are): the
    baseline, the recorder, the host."""
    from pytest_ssd.plugin import controller  # noqa: PLC0415  # see _configure_controller

    if judged_against is not None:  # with the datasheets' [baseline] bands, now assigned
        baseline.start(config, session, judged_against)
    if getattr(config.option, "numprocesses", None):  # xdist: the workers' progress lines
        config.stash[RELAY_KEY] = _relay(config, session.run_dir)
    store = present(session.store, "the results store")
    lines = [
        f"report:  {config.option.htmlpath}",
        f"results: {store.path}",
        f"db:      {session.options.db} (run {session.run_id})",
        f"files:   {session.run_dir}",
    ]
    recorder = controller.RunRecorder(session, lines)
    recorder.signalled = lambda: config.stash[INTERRUPTS_KEY].heard is not None
    batches = config.stash[BATCHES_KEY]
    # results.json is exported while a batched point's fio exits, not between point tests
    recorder.defer_export = lambda: bool(batches.active)
    batches.while_exiting = recorder.export_due
    config.pluginmanager.register(recorder, "ssd-recorder")
    host = present(session.host, "the host record")
    config.pluginmanager.register(controller.HostReport(session.tuners(), host), "ssd-host")


def pytest_sessionfinish(session: pytest.Session) -> None:
    relay = session.config.stash.get(RELAY_KEY, None)
    if relay is not None:  # the workers' last lines, above the summary
        relay.stop()
    batches = session.config.stash.get(BATCHES_KEY, None)
    if batches is not None:
        batches.close_all()


def _relay(config: pytest.Config, run_dir: Path) -> Relay:
    def show(line: str) -> None:  # looked up when used: the reporter registers after us
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        # xdist's progress dots leave the line open: ours starts on a line of its own
        if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
            reporter.write("\n")
        reporter.write_line(line)

    relay = Relay(run_dir, show, tty=sys.stdout.isatty())
    relay.start()
    return relay


def pytest_unconfigure(config: pytest.Config) -> None:
    relay = config.stash.get(RELAY_KEY, None)
    if relay is not None:
        relay.stop()
    starting = config.pluginmanager.get_plugin(WORKERS_START)
    if starting is not None:  # a run that ends before its workers got their devices
        starting.end()
        starting.opening.remove()
    session = config.stash.get(SESSION_KEY, None)
    if session is not None and session.worker:
        session.close_hosts()  # a worker's own connections and fio servers
    elif session is not None:
        session.close()
    interrupts = config.stash.get(INTERRUPTS_KEY, None)
    if interrupts is not None:
        interrupts.uninstall()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the resolved devices and the run folder to each worker."""
    starting = node.config.pluginmanager.get_plugin(WORKERS_START)
    session = node.config.stash.get(SESSION_KEY, None)
    if starting is not None:  # the devices are still being opened: where they will be
        starting.configure_node(node)
    elif session is not None:
        node.workerinput[WORKERINPUT_KEY] = session.workerinput()


@pytest.hookimpl(optionalhook=True)
def pytest_metadata(metadata: dict[str, Any], config: pytest.Config) -> None:
    """pytest-metadata's table (report.html's environment, on the controller and each worker):
    no secret either (a CI's repository URL with its token, a ``--metadata`` given one)."""
    if _active(config):
        metadata.update(masked(metadata))


def pytest_report_header(config: pytest.Config) -> list[str]:
    session = config.stash.get(SESSION_KEY, None)
    if session is None or session.worker:  # a worker's header is never shown
        return []
    if config.pluginmanager.has_plugin(WORKERS_START):  # shown once the devices are
        return []
    from pytest_ssd.plugin import controller  # noqa: PLC0415  # see _configure_controller

    return controller.terminal_lines(session, False)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under -n: every test of a device on one worker, test ids as without -n."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        return None
    from pytest_ssd.plugin import scheduling  # noqa: PLC0415  # the controller's, under -n

    return scheduling.scheduler(config, log, session.dut_ids)


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
    suites.mark(config, items)
    from pytest_ssd.plugin import drives  # noqa: PLC0415  # collection's, not every import's

    drives.mark(config.stash[SESSION_KEY], items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Datasheet lines to the points that measure them; print the plan (also --collect-only)."""
    ssd_session = session.config.stash.get(SESSION_KEY, None)
    if ssd_session is None:
        return
    try:
        link_datasheet_lines(session.items, SPEC_FIXTURE)  # the items -k and -m kept
        # the kept tests of a resumed run do not run: no batch holds their jobs
        runs = resume.to_run(ssd_session, session.items)
        session.config.stash[BATCHES_KEY].groups = mark_groups(runs)
    except SsdError:  # a bad marker: modifyitems' usage error is already on its way
        return
    if _is_worker(session.config):
        return
    try:
        lines = plan_lines(ssd_session, runs)
    except SsdError:  # a bad marker: modifyitems' usage error is already on its way
        return
    lines = [*resume.plan_lines(ssd_session, session.items), *lines]  # a resumed run's first
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if lines and reporter is not None:
        reporter.write_sep("-", "pytest-ssd plan")
        for line in lines:
            reporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A test a resumed run finished before is reported as recorded, not run again."""
    found = resume.kept_test(item.config.stash.get(SESSION_KEY, None), item.nodeid)
    if found is None:
        return None
    resume.report_kept(item, nextitem, found)
    return True


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
    if report.when == "call":
        extras = [*getattr(report, "extras", []), *item.stash.get(FIGURES_KEY, [])]
        report.extras = extras  # type: ignore[attr-defined]  # pytest-html's attribute
        session = item.config.stash.get(SESSION_KEY, None)
        if session is not None and report.passed:
            time_call(session, item, report.duration)


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
