"""A pytest plugin for the benchmarks: when each test phase started and stopped.

``-p tests.benchmarks.phases`` with ``SSD_BENCH_PHASES=<file>`` appends a JSON line
per phase (``nodeid``, ``when``, ``start``, ``stop``: pytest's own wall-clock
stamps), so a benchmark can time a run of tests from the first call's start to
the last call's stop, the set-ups and tear-downs between them included.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

PHASES_ENV = "SSD_BENCH_PHASES"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get(PHASES_ENV)
    if path:
        line = {"nodeid": report.nodeid, "when": report.when}
        line |= {"start": report.start, "stop": report.stop}
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
