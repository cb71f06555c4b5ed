"""The qualification suite's summary (``suites/qual``): per drive, every qualification check
of every part (integrity, power loss, admin load, features, namespaces, devices) with its
verdict (pass / fail / not judged) and its one line.

A check is the derived record ``qualification`` (:mod:`pytest_ssd.verdict.checks`), made by
any test with ``ssd.derive`` or :func:`pytest_ssd.methods.qual.record.settle`; ``pytest-ssd
compare --gate`` judges the checks of two runs.  :mod:`.report` is the section and the
headline (each drive's counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from pytest_ssd.report.sections.base import ReportSection


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.methods.qual import report  # noqa: PLC0415  # matplotlib: when it draws

    return [report.SECTION]
