"""What an xdist worker loads: the tests' own code, not the controller's report.

A worker runs tests and sends their reports; the report, its sections, the figures
(matplotlib) and the database writer are the controller's.  A worker that loaded them
cost 62–69 MiB PSS (issue 30); see tests/benchmarks/workers.py for today's figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

#: a plugin given with ``-p``: each worker writes the modules it loaded when its session ends
REPORTER = """
import json, os, sys

def pytest_sessionfinish(session):
    worker = getattr(session.config, "workerinput", None)
    if worker is not None:
        path = os.path.join(os.environ["SSD_WORKER_MODULES"], worker["workerid"] + ".json")
        with open(path, "w") as fh:
            json.dump(sorted(sys.modules), fh)
"""

#: what only the controller uses (numpy: a smoke test's worker needs none of it)
CONTROLLER_ONLY = (
    "matplotlib",
    "numpy",
    "pytest_ssd.figures",
    "pytest_ssd.report",
    "pytest_ssd.plugin.html",
    "pytest_ssd.plugin.collector",
)


def test_a_worker_loads_no_report_no_figures_and_the_figure_is_still_drawn(
    run_ssd: Any, pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(ssd_worker_modules=REPORTER)
    folder = tmp_path / "modules"
    folder.mkdir()
    monkeypatch.setenv("SSD_WORKER_MODULES", str(folder))
    run = run_ssd("--dut=scratch:128M", "-n", "1", "-k", "seq-write", "-p", "ssd_worker_modules")
    run.result.assert_outcomes(passed=1)
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    written = list(folder.glob("gw*.json"))
    assert [p.name for p in written] == ["gw0.json"], "the worker said what it loaded"
    loaded = set(json.loads(written[0].read_text()))
    assert "pytest_ssd.bench" in loaded, "the worker ran the test"
    found = sorted(m for m in loaded if m.startswith(CONTROLLER_ONLY))
    assert not found, f"a worker loaded the controller's modules: {found[:8]}"
    # the figure the test asked for is drawn on the controller, in the report and on disk
    pngs = list(run.run_dir.glob("artifacts/**/seq-write-tail-latency.png"))
    assert len(pngs) == 1 and pngs[0].read_bytes().startswith(b"\x89PNG")
    assert pngs[0].with_suffix(".svg").exists()
    report = (run.run_dir / "report.html").read_text()
    assert "seq-write tail latency" in report and "data:image/png;base64" in report
