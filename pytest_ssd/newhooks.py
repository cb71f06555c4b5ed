"""pytest-ssd's own hooks: a suite's ``conftest.py`` or a plugin implements them.

Added to pytest with ``pytest_addhooks`` (as pytest-xdist adds its own), so a
vendor extends pytest-ssd without editing it::

    # conftest.py of a vendor's suite
    from pytest_ssd import ReportSection

    def pytest_ssd_report_sections():
        return [ReportSection(suite="vendor", title="Vendor checks", build=my_section)]

pytest-ssd's own methods implement the same hooks, one folder each
(:mod:`pytest_ssd.methods`: ``methods/wsat/__init__.py`` declares the WSAT
section, its headline numbers and its figure kinds).  ``pytest-ssd report`` and
``compare`` (no pytest session) load the built-in methods and every plugin
installed under the entry-point group ``pytest_ssd``.

Each implementation is called on its own (:mod:`pytest_ssd.hookcall`): one that
raises or returns the wrong type is one line naming its plugin (a ``conftest.py``
by its path) and the hook — the run refused before anything is made, or for report
sections a box in the section's place — never an INTERNALERROR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_ssd.device.drive_class import DriveClass
    from pytest_ssd.device.identity import DeviceIdentity
    from pytest_ssd.extensions import FigureKind
    from pytest_ssd.health.sources import Source
    from pytest_ssd.methods.powerloss.controller import PowerController
    from pytest_ssd.purge.extra import PurgeProvider
    from pytest_ssd.report.sections.base import ReportSection
    from pytest_ssd.site import Dut

#: the entry-point group ``pytest-ssd report`` loads plugins from (besides pytest's ``pytest11``)
ENTRY_POINT_GROUP = "pytest_ssd"


@pytest.hookspec
def pytest_ssd_report_sections() -> list[ReportSection]:
    """The report sections this plugin declares: which suite's records each draws, and how.

    Every implementation's list is used; sections are ordered by their ``order``,
    then by title.  A suite whose records no section declares gets the generic
    table and bars of its measurements.
    """
    raise NotImplementedError


@pytest.hookspec
def pytest_ssd_figure_kinds() -> list[FigureKind]:
    """The figures ``ssd.plot(kind, measurement, title)`` draws for this plugin, by name.

    Each a :class:`~pytest_ssd.extensions.FigureKind`: a name (an identifier) and a
    function from the test's measurement to a matplotlib ``Figure``, called where the
    report is written (so import matplotlib inside it).  Names are pytest-ssd's
    (``latency_percentiles``) and every implementation's; one given twice is refused.
    """
    raise NotImplementedError


@pytest.hookspec(firstresult=True)
def pytest_ssd_drive_class(identity: DeviceIdentity) -> DriveClass | None:
    """The class of a drive (``cssd``, ``essd-ri`` ...), before pytest-ssd guesses it.

    ``--dut-class`` still wins, and a scratch device is not asked about (every suite
    applies to it).  Return None to leave the drive to the next
    implementation, and finally to pytest-ssd's guess from model and capacity.
    """
    raise NotImplementedError


@pytest.hookspec(firstresult=True)
def pytest_ssd_health_source(identity: DeviceIdentity) -> Source | None:
    """Where the device's temperature comes from, before nvme smart-log, hwmon, smartctl.

    Return an object with ``name`` and ``read() -> HealthSample``, or None.
    """
    raise NotImplementedError


@pytest.hookspec
def pytest_ssd_purge_methods() -> list[PurgeProvider]:
    """Purge methods to offer before pytest-ssd's own (:mod:`pytest_ssd.purge.extra`).

    ``--ssd-purge=NAME`` takes their names too.
    """
    raise NotImplementedError


@pytest.hookspec(firstresult=True)
def pytest_ssd_power_cycle(dut: Dut) -> PowerController | None:
    """The drive's power controller (a PDU outlet, a slot's power, a lab's driver), or None.

    Return an object with ``name`` and ``cycle() -> str`` (cut the power, restore it,
    one line saying what was done); asking does not cut.  ``--ssd-power-cycle=CMD``
    wins; with neither, the power-loss tests are skipped (docs/power-loss.md).
    """
    raise NotImplementedError
