"""How long each test's call took on a device, so that the next plan can say how long it runs.

The plan's steps are estimated from rates (:mod:`pytest_ssd.state.speeds`); a test's own
measurements depend on the suite's jobs, so they are timed instead: each test's call
(its state reached before, in its set-up) is kept under the device's speed key and the
profile in ``<report dir>/.ssd-test-times.json``, written at once (runs may be killed).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ssd.documents import loads_json, read_bounded
from pytest_ssd.state.estimate import Estimate

TIMES_FILE = ".ssd-test-times.json"
#: the largest times file read (a test's entry is about 100 bytes)
MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class Measured:
    """The plan's measurements: seconds of the tests timed before, and how many were;
    what the fio jobs of the others declare, and how many did."""

    seconds: float
    timed: int
    tests: int
    from_jobs: int = 0
    jobs: Estimate = field(default_factory=Estimate)

    @property
    def unknown(self) -> int:
        """Tests neither timed before nor declaring their jobs."""
        return self.tests - self.timed - self.from_jobs


@dataclass
class TestTimes:
    """Call seconds per ``<device key>|<profile>`` and test node id."""

    __test__ = False  # not a pytest test class

    path: Path
    data: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path) -> TestTimes:
        path = folder / TIMES_FILE
        data: dict[str, dict[str, float]] = {}
        with contextlib.suppress(OSError, ValueError):
            loaded = loads_json(read_bounded(path, MAX_BYTES))
            if isinstance(loaded, dict):
                data = {
                    str(k): {str(t): float(s) for t, s in v.items() if isinstance(s, int | float)}
                    for k, v in loaded.items()
                    if isinstance(v, dict)
                }
        return cls(path, data)

    def measured(
        self,
        device: str,
        profile: str,
        nodeids: list[str],
        estimates: Mapping[str, Estimate] | None = None,
    ) -> Measured:
        """The seconds the tests *nodeids* took on *device* before (those timed); for the
        others, their *estimates* from their fio jobs (where one is given)."""
        known = self.data.get(f"{device}|{profile}", {})
        timed = [known[n] for n in nodeids if n in known]
        given = estimates or {}
        estimated = [given[n] for n in nodeids if n not in known and n in given]
        jobs = sum(estimated, Estimate())
        return Measured(sum(timed), len(timed), len(nodeids), len(estimated), jobs)

    def record(self, device: str, profile: str, nodeid: str, seconds: float) -> None:
        """Remember the call of *nodeid* took *seconds* (a temporary file of this process)."""
        self.data.setdefault(f"{device}|{profile}", {})[nodeid] = round(seconds, 3)
        with contextlib.suppress(OSError):
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
            tmp.replace(self.path)
