"""The results database: every run of every drive, in SQLite (``reports/results.sqlite``)."""

from __future__ import annotations

from pytest_ssd.db.model import DriveRef, DriveResults, RunInfo, Series, shared_test_id
from pytest_ssd.db.reader import ALL, ResultsDb
from pytest_ssd.db.schema import APPLICATION_ID, SCHEMA_VERSION, check, connect
from pytest_ssd.db.writer import RunWriter, TestDone, TestRecords

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
