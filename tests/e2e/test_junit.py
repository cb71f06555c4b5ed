"""The --junitxml file a CI reads: numbers under unique names, strict when asked.

``ssd_junit_layout = strict`` is checked with ``xmllint --schema`` against the schema
Jenkins' xUnit plugin ships (tests/junit/junit-10.xsd); both layouts are read back with
junitparser, as a CI's script would.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml
from junitparser.xunit2 import JUnitXml as JUnitXml2

from pytest_ssd.results.junit import is_number
from tests.e2e.conftest import CSD_QUICK_JUNIT, SsdRun

pytestmark = pytest.mark.device

XSD = Path(__file__).resolve().parents[1] / "junit" / "junit-10.xsd"
#: the csd quick file, 106 tests (944 KB with the records inside; 158 KB as each test names
#: its drive)
CSD_LIMIT = 175_000
#: names a metric ends with: a number, always
METRICS = (".iops", ".bw_mib_s", ".lat_mean_us", "_us")


def _xmllint(path: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("xmllint") is None:
        pytest.skip("xmllint is not installed (Debian: libxml2-utils; ./run tests installs it)")
    argv = ["xmllint", "--noout", "--schema", str(XSD), str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _check(pairs: list[tuple[str, str]], where: str) -> None:
    """Names unique, no record, no unresolved value; metrics are numbers."""
    repeated = [name for name, n in Counter(name for name, _ in pairs).items() if n > 1]
    assert not repeated, (where, repeated)
    for name, value in pairs:
        assert value not in ("None", "nan") and value[:1] not in "{[", (where, name, value)
        assert not name.endswith(METRICS) or is_number(value), (where, name, value)


def _run(run_ssd: Any, junit: Path, *args: str) -> Any:
    return _ran(run_ssd("--dut=scratch:256M", f"--junitxml={junit}", *args, timeout=1200), junit)


def _ran(run: SsdRun, junit: Path) -> SsdRun:
    """*run* ended well and wrote its *junit* file, with properties."""
    out = run.result.stdout.str() + run.result.stderr.str()
    assert run.result.ret == 0, out[-3000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert "properties" in junit.read_text()
    return run


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["serial", "xdist"])
def test_each_testcase_names_its_drive_and_the_suite_its_run(
    run_ssd: Any, tmp_path: Path, workers: list[str]
) -> None:
    junit = tmp_path / "junit.xml"
    run = _run(run_ssd, junit, "--dut-label=build 7", *workers)
    (suite,) = JUnitXml2.fromfile(str(junit))
    cases = list(suite)
    host = socket.gethostname()
    for case in cases:
        props = {p.name: p.value for p in case.properties()}
        assert props["ssd.device"] == "scratch" and props["ssd.host"] == host, case.name
        assert props["ssd.label"] == "build 7", case.name
        assert "ssd.serial" not in props, "a scratch file has no serial: left out, not empty"
    found = {p.name: p.value for p in suite.properties()}
    assert found["ssd.run_id"] == run.results()["run"]["id"]
    assert found["ssd.device.scratch.host"] == host
    assert found["ssd.device.scratch.label"] == "build 7"


def test_each_testcase_has_numbers_under_unique_names(run_ssd: Any, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    _run(run_ssd, junit)
    cases = [case for suite in JUnitXml2.fromfile(str(junit)) for case in suite]
    metrics = 0
    for case in cases:
        pairs = [(p.name, p.value) for p in case.properties()]
        _check(pairs, case.name)
        metrics += sum(1 for name, _ in pairs if name.endswith(METRICS))
    assert cases and metrics, "the measurements' figures are in the file"
    if shutil.which("xmllint"):  # the strict layout's test says when it is missing
        assert _xmllint(junit).returncode != 0, "the default layout is not junit-10's"


def test_the_strict_layout_validates_against_junit_10(run_ssd: Any, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    _run(run_ssd, junit, "-o", "ssd_junit_layout=strict")
    checked = _xmllint(junit)
    assert checked.returncode == 0, checked.stderr[-2000:]
    (suite,) = JUnitXml.fromfile(str(junit))
    pairs = [(p.name, p.value) for p in suite.properties()]
    _check(pairs, suite.name)
    tests = {name.rsplit("::", 1)[0] for name, _ in pairs if "::" in name}
    assert len(tests) == len(list(suite)), "every test's properties, under its own name"
    assert any(name.endswith("::ssd.device") for name, _ in pairs), "each test's drive too"
    assert any(name.endswith("read.iops") for name, _ in pairs)


@pytest.mark.slow
def test_the_csd_quick_file_is_small(csd_quick: SsdRun) -> None:
    # suites/csd --dut=scratch:1G, quick, run once for tests/e2e/test_csd.py and this test
    junit = csd_quick.report_dir.parent / CSD_QUICK_JUNIT
    _ran(csd_quick, junit)
    assert junit.stat().st_size < CSD_LIMIT, junit.stat().st_size
    cases = [case for suite in JUnitXml2.fromfile(str(junit)) for case in suite]
    assert len(cases) == 106
    for case in cases:
        _check([(p.name, p.value) for p in case.properties()], case.name)


def test_a_layout_not_known_is_one_line(run_ssd: Any, tmp_path: Path) -> None:
    run = run_ssd("--dut=scratch:64M", "--junitxml=j.xml", "-o", "ssd_junit_layout=xunit")
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    err = run.result.stderr.str()
    assert "ssd_junit_layout = xunit: not a layout (one of: testcase, strict)" in err, err
    assert "Traceback" not in err and "INTERNALERROR" not in err
