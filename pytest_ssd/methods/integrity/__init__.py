"""Data integrity (``suites/qual/test_integrity.py``): every block written reads back as
written, checked with fio's own verification over the device's state transitions.

:mod:`.workloads` holds the fio jobs (headers every 4 KiB, crc32c, the offset in each) and
what a deallocated block reads as, :mod:`.analysis` reads fio's verification failures,
:mod:`.run` the steps on the ``ssd`` fixture, :mod:`.report` the section (what each check
covered).  The checks' verdicts are ``qualification`` records (:mod:`pytest_ssd.methods.qual`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.report.sections.base import ReportSection


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.methods.integrity import report  # noqa: PLC0415  # matplotlib: when it draws

    return [report.SECTION]
