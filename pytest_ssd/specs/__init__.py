"""Datasheets: specs as data, checks as small objects.

:func:`load_datasheet` reads a TOML datasheet (errors name file and key path),
:func:`mismatch` tells whether it describes a device, :class:`SpecCheck` checks
a measurement against one line, and :func:`plan` says how to measure a line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.lazy import exports

if TYPE_CHECKING:
    from pytest_ssd.specs.check import (
        SpecCheck,
        Verdict,
        checks,
        failures_first,
        unknown_line,
    )
    from pytest_ssd.specs.load import Loaded, datasheet_files, load_datasheet, load_datasheets
    from pytest_ssd.specs.match import mismatch, require_match, select
    from pytest_ssd.specs.measure import Plan, Reading, measured, plan
    from pytest_ssd.specs.model import DEFAULT_TOLERANCE, Datasheet, Drive, Metric, SpecLine
    from pytest_ssd.specs.units import Quantity, convert
else:  # a module is imported when one of its names is first asked for
    __getattr__ = exports(
        __name__,
        {
            ".check": ("SpecCheck", "Verdict", "checks", "failures_first", "unknown_line"),
            ".load": ("Loaded", "datasheet_files", "load_datasheet", "load_datasheets"),
            ".match": ("mismatch", "require_match", "select"),
            ".measure": ("Plan", "Reading", "measured", "plan"),
            ".model": ("DEFAULT_TOLERANCE", "Datasheet", "Drive", "Metric", "SpecLine"),
            ".units": ("Quantity", "convert"),
        },
    )

__all__ = [
    "DEFAULT_TOLERANCE",
    "Datasheet",
    "Drive",
    "Loaded",
    "Metric",
    "Plan",
    "Quantity",
    "Reading",
    "SpecCheck",
    "SpecLine",
    "Verdict",
    "checks",
    "convert",
    "datasheet_files",
    "failures_first",
    "load_datasheet",
    "load_datasheets",
    "measured",
    "mismatch",
    "plan",
    "require_match",
    "select",
    "unknown_line",
]
