"""Measurements and the per-run results store (results.json)."""

from __future__ import annotations

from pytest_ssd.results.files import StorageError, write_atomic
from pytest_ssd.results.record import Measurement
from pytest_ssd.results.store import ResultsStore

__all__ = ["Measurement", "ResultsStore", "StorageError", "write_atomic"]
