"""pytest-ssd: benchmark and qualify SSDs with fio, as a pytest plugin."""

from __future__ import annotations

__version__ = "0.1.0"

from pytest_ssd.errors import SsdError
from pytest_ssd.fixture import SsdBench

__all__ = ["SsdBench", "SsdError", "__version__"]
