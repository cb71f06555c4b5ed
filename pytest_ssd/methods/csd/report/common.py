"""What every part of the consumer-suite comparison uses: the drives, their tests, what compares.

A part (quick profiles, fill drive ...) takes the drives that ran its test and
whose workloads are alike the first one's (:func:`.match.match`: same test,
same access shape), draws them together and says, per drive, what was left
out and why: the test did not run, failed or was skipped, or its workload
differs.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure

from pytest_ssd.db import DriveResults, Series, shared_test_id
from pytest_ssd.figures import PALETTE
from pytest_ssd.report.sections.base import Context, notes
from pytest_ssd.report.sections.match import key_of, match
from pytest_ssd.results.record import Measurement

#: where the consumer suite's tests live (node ids are relative to the repository)
CSD = "csd/"
#: the test parameter of each device state the suite measures in, as a title
STATES = {"fob": "FOB", "cssd-1": "cssd, round 1", "cssd-2": "cssd, round 2", "used75": "used75"}

#: whether a drive has the results a part draws of a test (by its key)
Has = Callable[[DriveResults, str], bool]
#: ``alike(first, other, key)``: why *other*'s results of test *key* do not compare with
#: *first*'s, or None
Alike = Callable[[DriveResults, DriveResults, str], "str | None"]


@dataclass
class Part:
    """One comparison of the section: a heading, its graphs and tables, what was left out."""

    title: str
    body: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    def html(self) -> str:
        return f"<h3>{html.escape(self.title)}</h3>{''.join(self.body)}{notes(self.left_out)}"


def param_of(key: str) -> str:
    """The test parameters of a test key: ``...test_sync_writes[cssd-1]`` -> ``cssd-1``."""
    return key.rpartition("[")[2].rstrip("]") if key.endswith("]") else ""


def state_of(param: str) -> str:
    """'cssd, round 1' for the parameter ``cssd-1`` (and for ``cssd-1-rnd``)."""
    for prefix, title in STATES.items():
        if param == prefix or param.startswith(f"{prefix}-"):
            return title
    return param


def short(key: str) -> str:
    """A test key without the suite folder: ``test_fill_drive.py::test_fill_drive``."""
    return key.removeprefix(CSD)


class Drives:
    """The section's drives under their legend names, each with its colour.

    A name is the drive's label; a label that more than one drive has (this run's
    drive compared with its own earlier run) gets the run id, and a colour the
    palette gives no other label.
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.all = [d for d in ctx.drives if any(_in_csd(t) for t in _tests(d))]
        self.names: dict[int, str] = {}
        #: legend name -> colour
        self.colours: dict[str, str] = {}
        spare = len(ctx.palette.labels)
        for drive in ctx.drives:
            label = drive.drive.label
            if label not in self.colours:
                name, colour = label, ctx.palette.colour(label)
            else:
                name, colour = f"{label} ({drive.drive.run_id})", PALETTE[spare % len(PALETTE)]
                spare += 1
            self.names[id(drive)] = name
            self.colours[name] = colour

    def name(self, drive: DriveResults) -> str:
        return self.names[id(drive)]

    def figure(self, fig: Figure, title: str) -> str:
        return self.ctx.figures.html(fig, title)

    def tests_of(self, module: str) -> list[str]:
        """Keys of the tests in ``suites/csd/<module>`` that any drive has results of, in order."""
        keys: dict[str, None] = {}
        for drive in self.all:
            for nodeid in _tests(drive):
                if nodeid.startswith(f"{CSD}{module}::"):
                    keys.setdefault(shared_test_id(nodeid, drive.drive.dut_id))
        return list(keys)

    def comparable(
        self, key: str, what: str, has: Has, alike: Alike | None = None
    ) -> tuple[list[DriveResults], list[str]]:
        """The drives with results of test *key* (``has(drive, key)``) alike the first one's.

        Alike: the same workloads (every measurement of the test, :func:`.match.match`)
        and, if given, nothing *alike* objects to.  The rest are left out, each with
        one note on why (naming *what* they miss).
        """
        present = [d for d in self.all if has(d, key)]
        left_out = [
            f"{self.name(d)}: left out of {what}: {absent(d, key)}"
            for d in self.all
            if not has(d, key)
        ]
        reasons: dict[int, list[str]] = {id(d): [] for d in present}
        for mkey in measurement_names(present, key):
            found, why = match(present, mkey)
            kept = {id(one.drive) for one in found}
            dropped = [d for d in present if id(d) not in kept]
            for d, note in zip(dropped, why, strict=True):  # match notes each in drive order
                reasons[id(d)].append(note.removeprefix(f"{d.drive.label}: "))
        if alike is not None and present:
            for d in present[1:]:
                reason = alike(present[0], d, key)
                if reason:
                    reasons[id(d)].append(reason)
        for d in present:
            why = reasons[id(d)]
            if why:
                more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
                left_out.append(f"{self.name(d)}: left out of {what}: {why[0]}{more}")
        return [d for d in present if not reasons[id(d)]], left_out


def _in_csd(nodeid: str) -> bool:
    return nodeid.startswith(CSD)


def _tests(drive: DriveResults) -> list[str]:
    """The node ids the drive has results of, in the order they ran."""
    found = [m.test for m in drive.measurements] + [d.test for d in drive.derived]
    return list(dict.fromkeys(found))


def absent(drive: DriveResults, key: str) -> str:
    """Why *drive* has no results of test *key*: how the test ended, or that it did not run."""
    outcomes = [
        outcome
        for nodeid, outcome in drive.tests.items()
        if shared_test_id(nodeid, drive.drive.dut_id) == key
    ]
    if not outcomes:
        return f"{short(key)} did not run"
    if outcomes[0] == "passed":
        return f"{short(key)} passed without these results"
    return f"{short(key)} {outcomes[0]}"


def measurements_of(drive: DriveResults, key: str) -> list[Measurement]:
    """The drive's measurements of test *key*, in the order they ran."""
    return [m for m in drive.measurements if key_of(drive, m)[0] == key]


def measurement_names(drives: list[DriveResults], key: str) -> list[tuple[str, str]]:
    """(test key, measurement name) of every measurement of test *key*, the first drive's order."""
    for drive in drives:
        names = [(key, m.name) for m in measurements_of(drive, key)]
        if names:
            return list(dict.fromkeys(names))
    return []


def series(drive: DriveResults, nodeid: str, name: str) -> Series | None:
    """The series *name* the test *nodeid* stored (names repeat across a test's parameters)."""
    return next((s for s in drive.series if s.test == nodeid and s.name == name), None)


def derived(drive: DriveResults, key: str, name: str) -> tuple[str, dict[str, Any]] | None:
    """(node id, values) of the derived record *name* of test *key*."""
    for record in drive.derived:
        if record.name == name and shared_test_id(record.test, drive.drive.dut_id) == key:
            values: dict[str, Any] = record.values
            return record.test, values
    return None
