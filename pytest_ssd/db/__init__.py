"""The results database: every run of every drive, in SQLite (``reports/results.sqlite``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ssd.lazy import exports

if TYPE_CHECKING:
    from pytest_ssd.db.model import DriveRef, DriveResults, RunInfo, Series, shared_test_id
    from pytest_ssd.db.reader import ALL, ResultsDb
    from pytest_ssd.db.schema import APPLICATION_ID, SCHEMA_VERSION, check, connect
    from pytest_ssd.db.writer import RunWriter, TestDone, TestRecords
else:  # a module is imported when one of its names is first asked for
    __getattr__ = exports(
        __name__,
        {
            ".model": ("DriveRef", "DriveResults", "RunInfo", "Series", "shared_test_id"),
            ".reader": ("ALL", "ResultsDb"),
            ".schema": ("APPLICATION_ID", "SCHEMA_VERSION", "check", "connect"),
            ".writer": ("RunWriter", "TestDone", "TestRecords"),
        },
    )

__all__ = [
    "ALL",
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "DriveRef",
    "DriveResults",
    "ResultsDb",
    "RunInfo",
    "RunWriter",
    "Series",
    "TestDone",
    "TestRecords",
    "check",
    "connect",
    "shared_test_id",
]
