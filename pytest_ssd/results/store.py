"""results.json: the per-run record, rewritten atomically after every measurement.

A run that is killed keeps every measurement finished before, and says
``"complete": false``.  A write that fails (full or read-only filesystem) is a
:class:`StorageError` and leaves results.json as last written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pytest_ssd.results.files import storage_error, write_atomic
from pytest_ssd.results.record import Measurement, iso, verdict_order

SCHEMA_VERSION = 1


class ResultsStore:
    """The controller's record of a run, kept in ``<run dir>/results.json``."""

    def __init__(self, run_dir: Path, run_id: str, environment: dict[str, Any]) -> None:
        self.path = run_dir / "results.json"
        self.data: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "run": {
                "id": run_id,
                "start": iso(time.time()),
                "end": None,
                "complete": False,
                "outcome": {},
                **environment,
            },
            "devices": {},
            "transitions": [],
            "measurements": [],
            "derived": [],
            "conformance": [],
        }

    @property
    def measurements(self) -> list[Measurement]:
        return [Measurement(**m) for m in self.data["measurements"]]

    def add_device(self, dut_id: str, description: dict[str, Any]) -> None:
        self.data["devices"][dut_id] = description
        self.write()

    def add(self, measurement: Measurement) -> None:
        self.data["measurements"].append(measurement.as_dict())
        self.write()

    def add_derived(self, record: dict[str, Any]) -> None:
        self.data["derived"].append(record)
        self.write()

    def add_conformance(self, row: dict[str, Any]) -> None:
        """A datasheet verdict; the list stays sorted with the lines not met first."""
        rows = [*self.data["conformance"], row]
        self.data["conformance"] = sorted(rows, key=lambda r: verdict_order(r["verdict"]))
        self.write()

    def add_transition(self, transition: dict[str, Any]) -> None:
        self.data["transitions"].append(transition)
        self.write()

    def finish(self, outcome: dict[str, int], complete: bool) -> None:
        self.data["run"].update(end=iso(time.time()), outcome=outcome, complete=complete)
        self.write()

    def write(self) -> None:
        """Replace results.json whole; StorageError (the file unchanged) when that fails."""
        try:
            write_atomic(self.path, json.dumps(self.data, indent=1, sort_keys=False) + "\n")
        except OSError as exc:
            raise storage_error(self.path, exc, "--ssd-report-dir") from None
