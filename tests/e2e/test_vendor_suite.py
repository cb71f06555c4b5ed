"""A vendor's suite outside suites/: public API, its own report section, pytest-ssd's hooks.

examples/vendor_suite is copied to a folder of its own (no repository around
it, no --rootdir) and run on a scratch device; hooks a conftest.py implements
(drive class, health source, purge method) are exercised on a loop device.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path
from typing import Any

from tests.cli import run_cli
from tests.e2e.conftest import REPO

EXAMPLE = REPO / "examples" / "vendor_suite"


def _copy(tmp_path: Path) -> Path:
    suite = tmp_path / "lab" / "vendor_suite"
    shutil.copytree(EXAMPLE, suite, ignore=shutil.ignore_patterns("__pycache__"))
    return suite


def test_the_example_runs_outside_suites_with_its_own_section(run_ssd: Any, tmp_path: Path) -> None:
    suite = _copy(tmp_path)
    run = run_ssd(
        "--dut=scratch:256M",
        f"--datasheet={suite / 'datasheet.toml'}",
        "--datasheet-force",
        suite=suite,
        rootdir=None,
    )
    run.result.assert_outcomes(passed=1)
    results = run.results()
    (row,) = results["conformance"]
    assert (row["id"], row["verdict"]) == ("rnd-read-qd32", "met"), row
    (derived,) = [d for d in results["derived"] if d["name"] == "vendor-acceptance"]
    assert derived["values"]["measured"] > 100 and derived["values"]["verdict"].startswith("RND")
    page = (run.run_dir / "report.html").read_text()
    start = page.index('<section class="ssd-section" id="ssd-suite-vendor">')
    section = page[start : page.index("</section>", start)]
    assert "Vendor acceptance (examples/vendor_suite)" in section
    assert f"{derived['values']['measured']:,.0f} IOPS" in section
    assert "% of spec 100 IOPS" in section
    assert "Tests in vendor" not in page, "the declared section, not the generic table"
    # ssd.plot: the suite's own figure kind and the esd method's, drawn on the controller
    for stem in ("acceptance-iops", "acceptance-qos"):
        (png,) = (run.run_dir / "artifacts").rglob(f"{stem}.png")
        assert png.stat().st_size > 1000 and png.with_suffix(".svg").is_file(), stem
    assert unescape(page).count("acceptance qos") >= 1 and "no figure kind" not in page
    with sqlite3.connect(run.report_dir / "results.sqlite") as db:
        suites = db.execute("SELECT suite FROM tests WHERE run_id = ?", (run.run_dir.name,))
        assert [s for (s,) in suites] == ["vendor"]
    # pytest-ssd report has no conftest.py: the suite's measurements as the generic table
    out = tmp_path / "again.html"
    db = str(run.report_dir / "results.sqlite")
    done = run_cli("--db", db, "report", run.run_dir.name, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert 'id="ssd-suite-vendor"' in out.read_text() and "Tests in vendor/" in out.read_text()
    # results.json is the database's run: the same file again from the command line
    exported = run_cli("--db", db, "export", "--format=results-json", "--run", run.run_dir.name)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == results


HOOKS = """
import subprocess
from pytest_ssd import DriveClass, HealthSample

pytest_ssd_suite = "hooked"
ERASED = []


class Erase:
    name = "vendor-erase"

    def unsupported(self, identity):
        return None if identity.transport == "loop" else "only loop devices"

    def purge(self, identity, artifacts):
        subprocess.run(["blkdiscard", "--force", identity.path], check=True, timeout=60)
        (artifacts / "vendor-erase.done").write_text(identity.path)
        return "blkdiscard of the whole device"


class Probe:
    name = "vendor probe"

    def read(self):
        import time
        return HealthSample(t=time.monotonic(), temperature_c=41.5)


def pytest_ssd_drive_class(identity):
    return DriveClass("essd-wi", "the vendor's part number says so")


def pytest_ssd_health_source(identity):
    return Probe()


def pytest_ssd_purge_methods():
    return [Erase()]
"""

TEST = """
import pytest
from pytest_ssd import FioJob, WSAT_CLASSES

pytestmark = pytest.mark.ssd_applies(*WSAT_CLASSES)


@pytest.mark.dut_state("fob", pristine=True)
def test_after_the_vendor_erase(ssd):
    device = ssd.region("device")
    job = FioJob(name="w", pattern="seq", block_size=1 << 20, read_pct=0, offset=device.offset,
                 size=device.size)
    assert ssd.run(job).directions["write"].io_bytes == device.size
"""


def test_hooks_add_a_drive_class_a_health_source_and_a_purge_method(
    run_ssd: Any, tmp_path: Path, loop_device: Any
) -> None:
    dev = loop_device(64)
    suite = tmp_path / "hooked"
    suite.mkdir()
    (suite / "conftest.py").write_text(HOOKS)
    (suite / "test_hooked.py").write_text(TEST)
    junit = tmp_path / "junit.xml"
    run = run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--ssd-health-interval=0.2",
        f"--junitxml={junit}",
        suite=suite,
        rootdir=None,
    )
    run.result.assert_outcomes(passed=1)  # essd-wi: the WSAT-class test applies
    results = run.results()
    (device,) = results["devices"].values()
    assert device["drive_class"]["name"] == "essd-wi"
    assert device["drive_class"]["reason"] == "the vendor's part number says so"
    (transition,) = results["transitions"]
    purge = next(s for s in transition["steps"] if s["kind"] == "purge")
    assert "vendor-erase (added by a plugin): blkdiscard of the whole device" in json.dumps(purge)
    assert list(run.run_dir.glob("states/**/vendor-erase.done")), "the provider really ran"
    health = [v for k, v in _properties(junit) if k.endswith(".health.source")]
    assert health and all(h == "vendor probe" for h in health), health


def _properties(junit: Path) -> list[tuple[str, str]]:
    """The tests' properties in a junit XML file."""
    return [(p.get("name", ""), p.get("value", "")) for p in ET.parse(junit).iter("property")]
