"""What the results database gives back: runs, the drives in them, and their results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pytest_ssd.db.arrays import Arrays
from pytest_ssd.results.record import Derived, Measurement


@dataclass(frozen=True)
class DriveRef:
    """One device of one run, under the label it was measured with."""

    run_id: str
    dut_id: str
    label: str
    scratch: bool = False
    description: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: the build it measured (``--ssd-build``, else its firmware; None: not known)
    build: str | None = None

    @property
    def name(self) -> str:
        """Its label, with its device id when that differs (one label often names a build
        measured on several drives)."""
        return self.label if self.label == self.dut_id else f"{self.label} ({self.dut_id})"


@dataclass(frozen=True)
class RunInfo:
    """A run: when, where, whether pytest finished it, and its devices."""

    id: str
    start: str
    end: str | None
    complete: bool
    outcome: dict[str, int]
    run_dir: str
    environment: dict[str, Any]
    drives: tuple[DriveRef, ...]


@dataclass(frozen=True)
class Series:
    """Named arrays one test stored (a fill pass's bandwidth log, a latency histogram ...)."""

    test: str
    name: str
    meta: dict[str, Any]
    arrays: Arrays


@dataclass
class DriveResults:
    """Everything one drive measured in one run."""

    drive: DriveRef
    measurements: list[Measurement] = field(default_factory=list)
    derived: list[Derived] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    #: node id -> outcome (passed, failed, skipped, error ...)
    tests: dict[str, str] = field(default_factory=dict)
    #: node id -> the suite its conftest.py declared (none in databases before schema 2)
    suites: dict[str, str] = field(default_factory=dict)
    _index: dict[tuple[str, str], Measurement] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def measurement(self, test: str, name: str) -> Measurement | None:
        """The measurement *name* of *test* (a node id without the device, see shared_test_id)."""
        if self._index is None:
            self._index = {}
            for m in self.measurements:
                self._index.setdefault((shared_test_id(m.test, self.drive.dut_id), m.name), m)
        return self._index.get((test, name))

    def derived_values(self, test_name: str, name: str) -> dict[str, Any] | None:
        """The values of derived record *name* of the test function *test_name*, if any."""
        for record in self.derived:
            if record.name == name and shared_test_id(record.test, self.drive.dut_id) == test_name:
                values: dict[str, Any] = record.values
                return values
        return None

    def series_named(self, name: str) -> Series | None:
        return next((s for s in self.series if s.name == name), None)


_PARAMS = re.compile(r"\[(.*)\]$")


def shared_test_id(nodeid: str, dut_id: str) -> str:
    """A test's node id without the device parameter, so runs on other devices compare.

    ``suites/smoke/test_corners.py::test_corner[scratch-seq-read]`` ->
    ``suites/smoke/test_corners.py::test_corner[seq-read]``. Under ``-n N`` xdist's
    loadgroup ends the id in the device's group (``...]@dut-scratch``): left out too, so a
    run with workers compares with one without.
    """
    nodeid = nodeid.removesuffix(f"@dut-{dut_id}")
    match = _PARAMS.search(nodeid)
    if match is None:
        return nodeid
    head, params = nodeid[: match.start()], f"-{match.group(1)}-"
    params = params.replace(f"-{dut_id}-", "-", 1).strip("-")
    return f"{head}[{params}]" if params else head
