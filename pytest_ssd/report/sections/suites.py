"""Which suite a record belongs to, and test ids in suite form.

A test's suite is what its ``conftest.py`` declares (``pytest_ssd_suite =
"csd"``), stored with the test in the database.  Sections compare test ids in
suite form, ``csd/test_fill_drive.py::test_fill_drive[...]``, so a suite reads
the same whether it ran from ``suites/``, a vendor's folder or a copy (its
node ids differ with pytest's rootdir).  A test stored without a suite (an
older database) gets the folder above its file (``suites/csd/...`` -> csd).
"""

from __future__ import annotations

from dataclasses import replace

from pytest_ssd.db import DriveResults, Series

#: the suite of a test whose file has no folder in its node id and no declared suite
NO_SUITE = "tests"


def suite_of(nodeid: str, declared: str | None) -> str:
    """The suite of *nodeid*: the declared one, else the folder its file is in."""
    if declared:
        return declared
    folders = nodeid.split("::", 1)[0].split("/")[:-1]
    return folders[-1] if folders else NO_SUITE


def in_suite_form(nodeid: str, suite: str) -> str:
    """``suites/csd/test_x.py::test_y[a]`` -> ``csd/test_x.py::test_y[a]``."""
    path, sep, rest = nodeid.partition("::")
    return f"{suite}/{path.rsplit('/', 1)[-1]}{sep}{rest}"


def suite_view(drive: DriveResults) -> DriveResults:
    """*drive*'s results with every test id of its measurements and records in suite form."""

    def form(nodeid: str) -> str:
        return in_suite_form(nodeid, suite_of(nodeid, drive.suites.get(nodeid)))

    return replace(
        drive,
        measurements=[replace(m, test=form(m.test)) for m in drive.measurements],
        derived=[replace(d, test=form(d.test)) for d in drive.derived],
        series=[Series(form(s.test), s.name, s.meta, s.arrays) for s in drive.series],
        verdicts=[{**v, "test": form(v["test"])} if "test" in v else v for v in drive.verdicts],
        tests={form(nodeid): outcome for nodeid, outcome in drive.tests.items()},
        suites={form(nodeid): suite for nodeid, suite in drive.suites.items()},
    )
