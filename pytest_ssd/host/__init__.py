"""The host a run measures on (METHOD §9): its settings recorded, and --ssd-tune."""

from __future__ import annotations

from pytest_ssd.host.io import MachineIo, Roots, TuneError
from pytest_ssd.host.record import HostRecord, TuneLog
from pytest_ssd.host.settings import NOT_AVAILABLE, Reading
from pytest_ssd.host.tune import RESTORE_FILE, Tuner

__all__ = [
    "NOT_AVAILABLE",
    "RESTORE_FILE",
    "HostRecord",
    "MachineIo",
    "Reading",
    "Roots",
    "TuneError",
    "TuneLog",
    "Tuner",
]
