"""pytest-ssd: benchmark and qualify SSDs with fio, as a pytest plugin."""

from __future__ import annotations

from pytest_ssd.errors import SsdError
from pytest_ssd.fixture import SsdBench
from pytest_ssd.version import __version__

__all__ = ["SsdBench", "SsdError", "__version__"]
