"""What importing pytest-ssd costs a process: a run loads the machinery of the features it uses.

Every xdist worker imports the plugin (issue 30: 16 workers on 2 vCPUs start one after
another's CPU).  The plugin once loaded ~165 of pytest-ssd's modules, among them the
datasheet machinery, the baseline's verdicts, the database's reader and writer (sqlite3),
the host record and tuners and the plan's estimates, which only the controller, or a run
with a datasheet or ``--ssd-baseline``, uses.  Each is now imported where it is used.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: modules a process that imports the plugin (a worker of a run without a datasheet, a
#: baseline or a resumed run) never needs
NOT_LOADED = (
    "sqlite3",
    "pytest_ssd.db.reader",
    "pytest_ssd.db.writer",
    "pytest_ssd.db.lab",
    "pytest_ssd.db.model",
    "pytest_ssd.specs.check",
    "pytest_ssd.specs.model",
    "pytest_ssd.specs.load",
    "pytest_ssd.verdict.reference",
    "pytest_ssd.verdict.judge",
    "pytest_ssd.verdict.tolerance",
    "pytest_ssd.host.record",
    "pytest_ssd.host.tune",
    "pytest_ssd.host.settings",
    "pytest_ssd.plugin.estimates",
    "pytest_ssd.plugin.judge",
    "configparser",
)

#: the public API and the datasheet machinery still load when asked for
PUBLIC = """
import sys
import pytest_ssd
from pytest_ssd import SpecLine, Verdict, spec_plan, Quantity, CrossCheck, cross_check
from pytest_ssd.specs import load_datasheet, plan
from pytest_ssd.verdict import Baseline, judge_point
from pytest_ssd.db import ResultsDb, shared_test_id
assert spec_plan is plan and Verdict.__module__ == "pytest_ssd.specs.check"
assert callable(judge_point) and callable(shared_test_id) and callable(cross_check)
print("ok")
"""

#: a worker's test: the modules loaded by the time its first test runs
WORKER = """
import json, os, sys


def test_modules():
    with open("modules.json", "w") as fh:
        json.dump([os.environ.get("PYTEST_XDIST_WORKER"), sorted(sys.modules)], fh)
"""


def _loaded(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_importing_the_plugin_leaves_the_features_it_does_not_use() -> None:
    loaded = _loaded(
        "import json, sys; import pytest_ssd.plugin; print(json.dumps(sorted(sys.modules)))"
    )
    assert "pytest_ssd.bench" in loaded and "pytest_ssd.session" in loaded
    assert sorted(loaded.intersection(NOT_LOADED)) == []
    # pytest-ssd's own modules: 165 before issue 30's cut, 137 after it; 140 with what every
    # run needs at its start since (the secret mask, the run's shape, the stale-folder sweep)
    assert len({m for m in loaded if m.startswith("pytest_ssd")}) <= 140


def test_the_names_a_package_exports_load_when_asked_for() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PUBLIC], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_worker_loads_no_feature_its_run_does_not_use(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_modules=WORKER)
    result = pytester.runpytest_subprocess("-p", "pytest_ssd", "-n", "1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    worker, modules = json.loads((pytester.path / "modules.json").read_text())
    loaded = set(modules)
    assert worker == "gw0" and "pytest_ssd.bench" in loaded
    assert sorted(loaded.intersection(NOT_LOADED)) == []


def test_the_command_line_draws_nothing_until_a_command_draws() -> None:
    # matplotlib and the report were 0.6 s of every ``pytest-ssd`` start (``--help``,
    # ``list``, ``export``, ``history``): only ``report`` and ``compare`` import them
    loaded = _loaded(
        "import json, sys; import pytest_ssd.cli; print(json.dumps(sorted(sys.modules)))"
    )
    assert "pytest_ssd.cli.commands" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] == "matplotlib") == []
    assert "pytest_ssd.report.build" not in loaded
