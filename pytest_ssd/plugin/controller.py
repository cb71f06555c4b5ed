"""What only the controller loads: the report, its sections and figures, the results store.

:func:`pytest_ssd.plugin.lifecycle.pytest_configure` imports this module on the controller only,
so an xdist worker, which runs tests and sends their reports, never loads the report,
matplotlib or the database writer (tests/e2e/test_workers.py holds it to that).
"""

from __future__ import annotations

from pytest_ssd.plugin.collector import RunRecorder
from pytest_ssd.plugin.host import HostReport
from pytest_ssd.plugin.html import HtmlReport, terminal_lines
from pytest_ssd.plugin.junit import JunitProperties, check_layout
from pytest_ssd.plugin.plots import Plots

__all__ = [
    "HostReport",
    "HtmlReport",
    "JunitProperties",
    "Plots",
    "RunRecorder",
    "check_layout",
    "terminal_lines",
]
