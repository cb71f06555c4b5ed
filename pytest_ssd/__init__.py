"""pytest-ssd: benchmark and qualify SSDs with fio, as a pytest plugin.

The public API: what a suite (ours under ``suites/``, or a vendor's anywhere)
imports.  Each of pytest-ssd's methods is one folder of :mod:`pytest_ssd.methods`
(its workloads, run, figures and report section, registered through
:mod:`pytest_ssd.newhooks` as a vendor's plugin is); shared building blocks are
:mod:`pytest_ssd.analysis` (numbers from fio's logs) and :mod:`pytest_ssd.figures`
(matplotlib Figures); everything else is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# first: pytest would rewrite (and compile) every module imported below (see asserts)
from pytest_ssd import asserts as _asserts  # noqa: F401

# isort: split
from pytest_ssd.bench import SsdBench
from pytest_ssd.device.drive_class import ALL_CLASSES, DriveClass
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ConfigError, ParseError, SafetyError, SsdError, ToolError
from pytest_ssd.fio.engine import FioRun
from pytest_ssd.fio.job import FioJob, Pattern
from pytest_ssd.fio.results import DEFAULT_PERCENTILES, DirectionResult, JobResult
from pytest_ssd.health.sources import HealthSample
from pytest_ssd.lazy import exports
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge.extra import PurgeProvider
from pytest_ssd.purge.methods import Capabilities as PurgeCapabilities
from pytest_ssd.results.record import Derived, Measurement
from pytest_ssd.state.layout import Region
from pytest_ssd.version import __version__

if TYPE_CHECKING:
    from pytest_ssd.extensions import FigureKind
    from pytest_ssd.methods.esd import ESD_CLASSES
    from pytest_ssd.methods.wsat import WSAT_CLASSES
    from pytest_ssd.report.sections.base import (
        Context,
        KeyFigure,
        ReportSection,
        Section,
        notes,
        table,
    )
    from pytest_ssd.specs import SpecLine, Verdict
    from pytest_ssd.specs import plan as spec_plan
    from pytest_ssd.specs.units import Quantity
    from pytest_ssd.verdict.noise import CrossCheck, cross_check
else:  # mypy sees the imports above, and no catch-all attribute
    # loaded when first asked for: an xdist worker that runs tests never loads the report
    # (nor matplotlib, which its figures draw with), nor datasheets and verdicts unless used
    __getattr__ = exports(
        __name__,
        {
            ".extensions": ("FigureKind",),
            ".methods.esd": ("ESD_CLASSES",),
            ".methods.wsat": ("WSAT_CLASSES",),
            ".report.sections.base": (
                "Context",
                "KeyFigure",
                "ReportSection",
                "Section",
                "notes",
                "table",
            ),
            ".specs": ("SpecLine", "Verdict", "spec_plan=plan"),
            ".specs.units": ("Quantity",),
            ".verdict.noise": ("CrossCheck", "cross_check"),
        },
    )


__all__ = [
    "ALL_CLASSES",
    "DEFAULT_PERCENTILES",
    "ESD_CLASSES",
    "WSAT_CLASSES",
    "ConfigError",
    "Context",
    "CrossCheck",
    "Derived",
    "DeviceIdentity",
    "DirectionResult",
    "DriveClass",
    "FigureKind",
    "FioJob",
    "FioRun",
    "HealthSample",
    "JobResult",
    "KeyFigure",
    "Machine",
    "Measurement",
    "ParseError",
    "Pattern",
    "PurgeCapabilities",
    "PurgeProvider",
    "Quantity",
    "Region",
    "ReportSection",
    "SafetyError",
    "Section",
    "SpecLine",
    "SsdBench",
    "SsdError",
    "ToolError",
    "Verdict",
    "__version__",
    "cross_check",
    "notes",
    "spec_plan",
    "table",
]
