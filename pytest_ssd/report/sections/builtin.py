"""pytest-ssd's own report sections, declared through its own hook like a vendor's.

Registered by the plugin (pytest runs) and by ``pytest-ssd report``/``compare``;
the suites under ``suites/`` name themselves in their ``conftest.py``
(``pytest_ssd_suite = "csd"``).  The order is the method's.
"""

from __future__ import annotations

import pluggy

from pytest_ssd.report.sections import csd, esd, keyresults, snia, wsat
from pytest_ssd.report.sections.base import ReportSection

hookimpl = pluggy.HookimplMarker("pytest")

SECTIONS = (
    ReportSection(suite="smoke", title="Four corners (suites/smoke)", order=10),
    ReportSection(
        suite="csd",
        title=csd.TITLE,
        build=csd.section,
        order=20,
        kinds=(
            "cdm-*",
            "fill",
            "fill-speed",
            "speed-read",
            "sync-writes",
            "lowqd-point",
            "tail-latency",
        ),
    ),
    ReportSection(
        suite="esd",
        title=esd.TITLE,
        build=esd.section,
        order=30,
        kinds=("precondition-*", "qos", "esd-point"),
        headline=keyresults.esd_headline,
    ),
    ReportSection(
        suite="snia",
        title=snia.TITLE,
        build=snia.section,
        order=40,
        kinds=("snia-*",),
        headline=keyresults.snia_headline,
    ),
    ReportSection(
        suite="wsat",
        title=wsat.TITLE,
        build=wsat.section,
        order=50,
        kinds=("wsat-*",),
        headline=keyresults.wsat_headline,
    ),
    ReportSection(suite="datasheet", title="Datasheet measurements (suites/datasheet)", order=60),
)


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    return list(SECTIONS)
