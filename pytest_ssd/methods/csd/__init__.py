"""The consumer SSD method (``suites/csd``, METHOD §4): quick profiles, fill drive and
speed profile, sync writes, low QD by read share, QD1 latency.

:mod:`.workloads` holds its fio jobs and its flow (``flow.CSSD_ROUNDS``), :mod:`.analysis`
the low-QD numbers, :mod:`.figures` its graphs, :mod:`.report` its section of the report;
the headline numbers are pytest-ssd's generic ones (sequential MiB/s, 4 KiB IOPS, p99.9
latency).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.report.sections.base import ReportSection


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.methods.csd import report  # noqa: PLC0415  # matplotlib: when it draws

    return [report.SECTION]
