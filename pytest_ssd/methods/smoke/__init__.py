"""The smoke method (``suites/smoke``): the four corners, a quick look at any device.

Its fio jobs are in :mod:`.workloads`; its section of the report is pytest-ssd's
generic one (the bars and table of its measurements).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.report.sections.base import ReportSection


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.report.sections.base import ReportSection  # noqa: PLC0415  # the report's

    return [ReportSection(suite="smoke", title="Four corners (suites/smoke)", order=10)]
