"""Benchmark points as tests: ``@pytest.mark.ssd_points("qd, read_pct", points_of)``.

A method's points depend on the profile (the full low-QD matrix has 11 read
shares, the quick one 3), and the profile on the device (scratch runs quick
unless told).  So a sweep declares a function of the profile name that returns
its points as ``pytest.param(...)`` (values, id, the state marker), and the
plugin parametrizes the test per device with that device's points: one test per
point, ids ``<device>-<point>``, in the order the function gives them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pytest_ssd.bench import COVERS_MARKER
from pytest_ssd.errors import ConfigError
from pytest_ssd.session import SsdSession
from pytest_ssd.state import plan

POINTS_MARKER = "ssd_points"
POINTS_HELP = (
    f"{POINTS_MARKER}(argnames, points, jobs=None): one test per benchmark point; "
    "points(profile_name) returns the points as pytest.param(...) with an id and the state "
    "marker; with jobs(ssd, *values), the fio jobs a point runs, consecutive points run in "
    "one fio process"
)

#: ``pytest.mark.ssd_jobs(jobs=jobs_of)`` on a test that is not a sweep: ``jobs_of(ssd, **params)``,
#: called with the test's parameters (less ``dut``), builds the fio jobs its body runs; the plan
#: counts them on a device's first run.  Unlike ``ssd_points(jobs=)`` it does not batch.
JOBS_MARKER = "ssd_jobs"
JOBS_HELP = (
    f"{JOBS_MARKER}(jobs=jobs_of): jobs_of(ssd, **params) builds the fio jobs the test runs (the "
    "test's own builder); the plan counts them before the drive's first run; nothing is batched"
)

#: ``points(profile_name)``: the sweep's points under that profile, in the method's order
Points = Callable[[str], Sequence[Any]]


def declared(item: pytest.Item) -> tuple[list[str], Points, Any] | None:
    """A sweep's ``ssd_points``: its argnames, its points function and its jobs function."""
    marker = item.get_closest_marker(POINTS_MARKER)
    if marker is None:
        return None
    if len(marker.args) != 2 or not callable(marker.args[1]):
        raise ConfigError(
            f"{item.nodeid}: @pytest.mark.{POINTS_MARKER} takes (argnames, points_function)"
        )
    names = [name.strip() for name in str(marker.args[0]).split(",") if name.strip()]
    return names, marker.args[1], marker.kwargs.get("jobs")


def jobs_declared(item: pytest.Item) -> Callable[..., Any] | None:
    """A test's jobs function, called ``(ssd, *values)`` or ``(ssd, **params)``, or None.

    The sweep's ``ssd_points(jobs=)`` takes the point's values in order; ``ssd_jobs``
    the test's parameters by name (``dut`` left out).  None when it declares neither.
    """
    callspec = getattr(item, "callspec", None)
    found = declared(item)
    if callspec is None:
        return None
    if found is not None and found[2] is not None:
        names, jobs_of = found[0], found[2]
        return lambda ssd: jobs_of(ssd, *(callspec.params[name] for name in names))
    marker = item.get_closest_marker(JOBS_MARKER)
    if marker is None:
        return None
    jobs_of = marker.kwargs.get("jobs")
    if marker.args or not callable(jobs_of):
        raise ConfigError(f"{item.nodeid}: @pytest.mark.{JOBS_MARKER} takes (jobs=jobs_function)")
    params = {name: value for name, value in callspec.params.items() if name != "dut"}
    return lambda ssd: jobs_of(ssd, **params)


def check_jobs_markers(items: Sequence[pytest.Item]) -> None:
    """A malformed ``ssd_jobs`` is refused before the first test, not left unsaid."""
    for item in items:
        jobs_declared(item)


def point_params(session: SsdSession, definition: pytest.Function) -> tuple[list[str], list[Any]]:
    """("dut" and the point's argnames, a param per device and point); ([], []) if undeclared."""
    found = declared(definition)
    if found is None:
        return [], []
    names, points, _ = found
    params: list[Any] = []
    for dut_id in session.dut_ids:
        for point in points(session.profile_of(dut_id).name):
            values = tuple(point.values)
            if len(values) != len(names):
                raise ConfigError(
                    f"{definition.nodeid}: point {point.id} has {len(values)} values for "
                    f"{len(names)} names ({', '.join(names)})"
                )
            params.append(
                pytest.param(dut_id, *values, marks=point.marks, id=f"{dut_id}-{point.id}")
            )
    return ["dut", *names], params


#: ``pytest.mark.ssd_workload(pattern=, block_size=, iodepth=, numjobs=, read_pct=)`` on a
#: point that measures that workload over the whole device (a datasheet line's conditions)
WORKLOAD_MARKER = "ssd_workload"
WORKLOAD_HELP = (
    f"{WORKLOAD_MARKER}(pattern=, block_size=, iodepth=, numjobs=, read_pct=): the point "
    "measures this workload over the whole device; a datasheet line of the same workload "
    "and state is checked in it"
)
WORKLOAD_KEYS = ("pattern", "block_size", "iodepth", "numjobs", "read_pct")


def _dut(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("dut")


def link_datasheet_lines(items: list[pytest.Item], spec_fixture: str) -> None:
    """Check each datasheet line in the point that measures it, not again in its own test.

    A line whose workload (pattern, block size, QD, jobs, read share) and state are a
    selected point's (``ssd_workload`` and ``dut_state``) on the same device is marked
    on the point (``ssd_covers``, the fixture asserts it there) and its own test is
    skipped, saying where it is checked.  Run after ``-k``/``-m`` deselection.
    """
    points: dict[tuple[Any, ...], pytest.Item] = {}
    for item in items:
        marker, need = item.get_closest_marker(WORKLOAD_MARKER), plan.need_of(item)
        if marker is not None and need is not None:
            shape = tuple(marker.kwargs.get(key) for key in WORKLOAD_KEYS)
            points.setdefault((_dut(item), shape, need.state), item)
    for item in items:
        callspec = getattr(item, "callspec", None)
        line = None if callspec is None else callspec.params.get(spec_fixture)
        if line is None:
            continue
        shape = (line.pattern, line.block_size, line.qd, line.jobs, line.read_pct)
        point = points.get((_dut(item), shape, line.state))
        if point is not None:
            point.add_marker(getattr(pytest.mark, COVERS_MARKER)(line))
            where = point.nodeid.rpartition("/")[2]
            item.add_marker(pytest.mark.skip(reason=f"{line.id}: measured and checked in {where}"))
