"""A pytest plugin for the benchmarks: when each test phase started and stopped.

``-p tests.benchmarks.phases`` with ``SSD_BENCH_PHASES=<file>`` appends a JSON line
per phase (``nodeid``, ``when``, ``start``, ``stop``: pytest's own wall-clock
stamps; ``reached``: when a set-up's state transition ended, else None), so a
benchmark can time a run of tests from the moment their state was reached to the
last call's stop, the set-ups and tear-downs between them included.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from pytest_ssd.results.transition import TRANSITION_PROPERTY

PHASES_ENV = "SSD_BENCH_PHASES"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get(PHASES_ENV)
    if path:
        line: dict[str, object] = {"nodeid": report.nodeid, "when": report.when}
        line |= {"start": report.start, "stop": report.stop, "reached": None}
        if report.when == "setup":
            for name, value in report.user_properties:
                if name == TRANSITION_PROPERTY:
                    end = json.loads(str(value))["end"]
                    line["reached"] = datetime.fromisoformat(end).timestamp()
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
