"""The datasheet method (``suites/datasheet``): each line of a drive's datasheet measured.

Its tests come from the datasheet (:mod:`pytest_ssd.specs`); its section of the
report is pytest-ssd's generic one, and the verdicts open the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.report.sections.base import ReportSection


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.report.sections.base import ReportSection  # noqa: PLC0415  # the report's

    return [
        ReportSection(
            suite="datasheet", title="Datasheet measurements (suites/datasheet)", order=60
        )
    ]
