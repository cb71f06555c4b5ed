"""The records a run makes (measurements, derived values, verdicts) and writing files safely."""

from __future__ import annotations

from pytest_ssd.results.files import StorageError, write_atomic
from pytest_ssd.results.record import Measurement

__all__ = ["Measurement", "StorageError", "write_atomic"]
