"""The write-saturation method (``suites/wsat``, METHOD §6): write-intensive drives
written until they saturate, IOPS against time and against data written.

:mod:`.workloads` holds the workloads and their timing, :mod:`.run` the run and its
records, :mod:`.figures` the graphs, :mod:`.report` the section and the headline
numbers (each workload's steady IOPS).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.device.drive_class import DriveClassName
    from pytest_ssd.report.sections.base import ReportSection

#: the drive classes WSAT applies to: ``pytest.mark.ssd_applies(*WSAT_CLASSES)``
WSAT_CLASSES: tuple[DriveClassName, ...] = ("essd-wi",)


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.methods.wsat import report  # noqa: PLC0415  # matplotlib: when it draws

    return [report.SECTION]
