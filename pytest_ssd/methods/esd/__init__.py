"""The enterprise SSD method (``suites/esd``, METHOD §5): preconditioning to steady state,
the QD and block-size sweeps, RND QoS at QD1.

:mod:`.workloads` holds its jobs and device states, :mod:`.run` the steps run on the
``ssd`` fixture, :mod:`.analysis` the record of a sweep's point, :mod:`.figures` the
graphs, :mod:`.report` the section and the headline numbers (steady-state IOPS and
MiB/s, QoS p99.99).  Its figure kind
``qos_percentiles`` draws any measurement on the QoS graph's axes (``ssd.plot``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.methods import hookimpl

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from pytest_ssd.device.drive_class import DriveClassName
    from pytest_ssd.extensions import FigureKind
    from pytest_ssd.report.sections.base import ReportSection
    from pytest_ssd.results.record import Measurement

#: the drive classes esd applies to (enterprise): ``pytest.mark.ssd_applies(*ESD_CLASSES)``
ESD_CLASSES: tuple[DriveClassName, ...] = ("essd-ri", "essd-mu", "essd-wi")


@hookimpl
def pytest_ssd_report_sections() -> list[ReportSection]:
    from pytest_ssd.methods.esd import report  # noqa: PLC0415  # matplotlib: when it draws

    return [report.SECTION]


def _qos_percentiles(measurement: Measurement) -> Figure:
    from pytest_ssd.methods.esd import figures  # noqa: PLC0415  # matplotlib: when it draws

    return figures.qos_percentiles(measurement)


@hookimpl
def pytest_ssd_figure_kinds() -> list[FigureKind]:
    from pytest_ssd.extensions import FigureKind  # noqa: PLC0415

    return [FigureKind("qos_percentiles", _qos_percentiles)]
