"""The report sections outside a pytest run: pytest-ssd's own and installed plugins'.

``pytest-ssd report`` and ``compare`` ask the same hook as a run does
(:func:`pytest_ssd.newhooks.pytest_ssd_report_sections`) of pytest-ssd's own
sections and of every plugin installed under the ``pytest_ssd`` entry-point
group; a suite's ``conftest.py`` is not loaded here, so its own sections show
only in the run's report (its measurements still show as a table).
"""

from __future__ import annotations

import pluggy

from pytest_ssd import newhooks
from pytest_ssd.report.sections import builtin
from pytest_ssd.report.sections.base import ReportSection


def declared_sections() -> list[ReportSection]:
    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(newhooks)
    manager.register(builtin, "ssd-builtin-sections")
    manager.load_setuptools_entrypoints(newhooks.ENTRY_POINT_GROUP)
    return [s for found in manager.hook.pytest_ssd_report_sections() for s in found]
