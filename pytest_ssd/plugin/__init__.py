"""pytest-ssd's pytest plugin: wiring only.

Each module below holds one part of the glue; pytest registers each once, as this package
is registered (pytest loads it through its ``pytest11`` entry point):

- :mod:`.options`: the command-line and ini options, converted and validated;
- :mod:`.lifecycle`: the run's configure and end, the xdist hand-over, the header;
- :mod:`.collection`: what is collected (per device, point and spec line), the markers,
  the suites, the plan;
- :mod:`.fixtures`: the ``ssd_session``, ``dut`` and ``ssd`` fixtures and a test's report.

Run state lives in :class:`pytest_ssd.session.SsdSession` (``config.stash``);
the report lives in :mod:`pytest_ssd.report`.
"""

from __future__ import annotations

import pytest

from pytest_ssd import newhooks
from pytest_ssd.asserts import rewritten
from pytest_ssd.plugin import collection, fixtures, lifecycle, options

# the method drivers check what fio did with asserts, as tests do: pytest rewrites them too
# (a failed check names its values); everything else in pytest_ssd raises SsdError instead
pytest.register_assert_rewrite(*rewritten())

#: the glue's modules, each registered by name (not through ``pytest_plugins``, which would
#: mark them for pytest's assert rewriting: :mod:`pytest_ssd.asserts`)
MODULES = {
    "ssd-options": options,
    "ssd-lifecycle": lifecycle,
    "ssd-collection": collection,
    "ssd-fixtures": fixtures,
}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """As pytest registers this package: pytest-ssd's own hooks (:mod:`pytest_ssd.newhooks`),
    its methods that implement them, then the glue's modules, before the command line is
    parsed."""
    pluginmanager.add_hookspecs(newhooks)
    from pytest_ssd import methods  # noqa: PLC0415  # the methods' hook modules, no more

    methods.register(pluginmanager)
    for name, module in MODULES.items():
        pluginmanager.register(module, name)
