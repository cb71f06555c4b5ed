"""The controller's pytest hooks for the host: restore at the end, the environment summary."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, Protocol

import pytest

from pytest_ssd.host.record import HostRecord


class Tunes(Protocol):
    """A machine's tuner (:class:`~pytest_ssd.host.tune.Tuner`)."""

    def restore(self) -> None: ...

    def summary_lines(self) -> list[str]: ...


class HostReport:
    """Registered on the controller once the run has started."""

    def __init__(self, tuners: Sequence[Tunes], record: HostRecord) -> None:
        self.tuners = tuners
        self.record = record

    # trylast wrapper: after every sessionfinish (xdist stops its workers there), before the
    # terminal reporter's own wrapper writes the summary that says what was restored
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self) -> Generator[None, Any, Any]:
        try:
            return (yield)
        finally:
            for tuner in self.tuners:
                tuner.restore()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "pytest-ssd environment")
        for line in self.record.table_lines():
            terminalreporter.write_line(line)
        for warning in self.record.warnings():
            terminalreporter.write_line(f"warning: {warning}", yellow=True)
        for line in (line for tuner in self.tuners for line in tuner.summary_lines()):
            failed = "could NOT" in line
            terminalreporter.write_line(line, red=failed, bold=failed)
