"""The report sections outside a pytest run: pytest-ssd's own and installed plugins'.

``pytest-ssd report`` and ``compare`` ask the same hook as a run does
(:func:`pytest_ssd.newhooks.pytest_ssd_report_sections`) of pytest-ssd's own
methods (:mod:`pytest_ssd.methods`) and of every plugin installed under the
``pytest_ssd`` entry-point group; a suite's ``conftest.py`` is not loaded here, so
its own sections show only in the run's report (its measurements still show as a
table).
"""

from __future__ import annotations

from importlib.metadata import entry_points

import pluggy

from pytest_ssd import methods, newhooks
from pytest_ssd.errors import ExtensionError, call_extension
from pytest_ssd.report.build import declared_sections as declared_by
from pytest_ssd.report.build import failing
from pytest_ssd.report.sections.base import ReportSection


def declared_sections() -> list[ReportSection]:
    """Our sections and those of every plugin installed under the ``pytest_ssd`` group.

    A plugin that cannot be loaded (its import raises, its hooks do not fit pytest-ssd's)
    is one failing section saying so: a box in the report, one line; the rest stand.
    """
    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(newhooks)
    methods.register(manager)
    unloaded: list[ReportSection] = []
    for point in entry_points(group=newhooks.ENTRY_POINT_GROUP):
        if manager.get_plugin(point.name) is not None or manager.is_blocked(point.name):
            continue
        where = f"plugin {point.name} ({point.value})"
        try:
            plugin = call_extension(f"{where}: loading it", point.load)
            call_extension(f"{where}: registering it", manager.register, plugin, point.name)
        except ExtensionError as exc:
            unloaded.append(failing(f"plugin {point.name}", exc))
    return [*declared_by(manager.hook.pytest_ssd_report_sections), *unloaded]
