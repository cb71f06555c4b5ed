"""Admin commands under load (``suites/qual/test_admin_load.py``): the latency cost of what
a fleet does to a drive while it serves.

:mod:`.workloads` holds the reads and their timing, :mod:`.poller` the admin commands
polled on the device's machine, :mod:`.analysis` the verdicts (the baseline verdicts'
judge: polled runs against unpolled ones), :mod:`.run` the steps and records,
:mod:`.figures` and :mod:`.report` the section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.report.sections.base import ReportSection


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.methods.adminload import report  # noqa: PLC0415  # matplotlib: when it draws

    return [report.SECTION]
