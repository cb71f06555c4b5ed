"""The run's life on the controller and on each worker: configure (the session, its report,
recorder and signal handlers), the xdist hand-over, the header, and the end."""

from __future__ import annotations

import functools
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import ExtensionInterrupt, SsdError, present
from pytest_ssd.extensions import Extensions, from_hooks
from pytest_ssd.plugin import against, health
from pytest_ssd.plugin.batching import BATCHES_KEY, Batches
from pytest_ssd.plugin.collection import declared
from pytest_ssd.plugin.options import from_config
from pytest_ssd.plugin.workers import PLUGIN as WORKERS_START
from pytest_ssd.plugin.workers import WorkersStart, refusal
from pytest_ssd.proc.runner import die_with_parent
from pytest_ssd.secret import masked
from pytest_ssd.session import SESSION_KEY, WORKERINPUT_KEY, SsdSession
from pytest_ssd.session.handoff import wait_for
from pytest_ssd.state.progress import terminal_writer
from pytest_ssd.state.relay import Relay, worker_writer

RELAY_KEY = pytest.StashKey[Relay]()
#: the controller's signal handlers (plugin.interrupts.Interrupts, imported where installed)
INTERRUPTS_KEY = pytest.StashKey[Any]()


def extensions(config: pytest.Config) -> Extensions:
    """What suites and plugins add through the hooks, for the session.

    A conftest.py or plugin whose hook raises or returns the wrong thing refuses the run
    in one line naming it, before anything is made.
    """
    try:
        return from_hooks(config.hook)
    except SsdError as exc:
        raise pytest.UsageError(str(exc)) from None


def _active(config: pytest.Config) -> bool:
    """Act only for suites (or when --dut is given): other test runs stay untouched."""
    return bool(config.getoption("ssd_dut")) or bool(declared(config))


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
        against.register(config, worker.run_dir)
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
    judged_against = against.prepare(config, session)  # a refusal before anything is made
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
        against.start(config, session, judged_against)
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
