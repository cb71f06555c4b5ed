"""Under ``-n N``: the devices open while xdist starts the workers (:mod:`..session.handoff`).

The controller's configure starts opening the devices in a thread and returns; xdist
starts its workers in ``pytest_sessionstart``, each given the handoff file's path; this
plugin's wrapper around that hook joins the thread once every worker is started, starts
the run (its folder, the database) and hands the devices over.

A refusal is the same one line as without ``-n``, still inside ``pytest_sessionstart``,
so pytest writes no report, junit file or summary for it: the workers are told to exit
(they have opened nothing), xdist's are ended, the session is closed and nothing is left.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator
from typing import Any

import pytest

from pytest_ssd.errors import SsdError
from pytest_ssd.session import WORKERINPUT_KEY, SsdSession
from pytest_ssd.session.handoff import Opening

PLUGIN = "ssd-workers-start"


def refusal(session: SsdSession, exc: SsdError) -> pytest.UsageError:
    """The one-line refusal of a controller's session (with or without ``-n``); what
    recovery put back (or refused) is said first, even when the session is refused."""
    for line in (line for tuner in session.tuners() for line in tuner.summary_lines()):
        sys.stderr.write(f"pytest-ssd: {line}\n")
    return pytest.UsageError(str(exc))


class WorkersStart:
    """The devices' opening while the workers start, joined before the first test."""

    def __init__(
        self,
        config: pytest.Config,
        session: SsdSession,
        args: list[str],
        started: Callable[[], None],
    ) -> None:
        self.config = config
        self.session = session
        self.args = args
        #: the rest of the controller's set-up, once the run has started
        self.started = started
        self.opening = Opening.start(session.open_devices)

    def configure_node(self, node: Any) -> None:
        """A worker's input: where its devices will be; none started once the run is refused."""
        node.workerinput[WORKERINPUT_KEY] = {
            "handoff": str(self.opening.path),
            "controller_pid": os.getpid(),
        }
        if self.opening.failed:  # refused already: no more workers started for nothing
            self._join()

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session: pytest.Session) -> Generator[None, None, None]:
        yield  # the terminal's header, then xdist starts every worker (it raised: no join)
        self._join()
        recorder = self.config.pluginmanager.get_plugin("ssd-recorder")
        if recorder is not None:  # registered after its own pytest_sessionstart was called
            recorder.pytest_sessionstart(session)

    def _join(self) -> None:
        try:
            self.opening.join()
            self.session.start_run(self.args)
        except SsdError as exc:
            self.end()
            raise refusal(self.session, exc) from None
        except BaseException:
            self.end()
            raise
        self.opening.hand_over(self.session.workerinput())
        self.started()
        self._show_header()

    def _show_header(self) -> None:
        """The header lines pytest asked for before the devices were known, shown now."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or not reporter.showheader or reporter.no_header:
            return
        from pytest_ssd.plugin import controller  # noqa: PLC0415  # the controller's own

        for line in controller.terminal_lines(self.session, distributed=True):
            reporter.write_line(line)

    def end(self) -> None:
        """The run ends before the handoff (refused, interrupted): the workers exit and the
        session is closed."""
        if self.opening.written:
            return
        self.opening.cancel()
        dsession = self.config.pluginmanager.get_plugin("dsession")
        nodes = getattr(dsession, "nodemanager", None)
        if nodes is not None:  # before the session's sweep: no worker is "left running"
            nodes.teardown_nodes()
        self.session.close()
        self.session.run_store.unmake_folder(self.session.devices.made_report_dir)
