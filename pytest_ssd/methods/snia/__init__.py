"""The SNIA PTS method (``suites/snia``): IOPS, throughput and latency, each test in rounds
until the SNIA steady-state rule holds.

:mod:`.workloads` holds each test's cells and plan, :mod:`.run` the round loop,
:mod:`.figures` the graphs, :mod:`.report` the section and the headline numbers
(each test's tracked variable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.report.sections.base import ReportSection


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.methods.snia import report  # noqa: PLC0415  # matplotlib: when it draws

    return [report.SECTION]
