"""The report of a real smoke run, opened in headless Chromium as a reader would open it.

Chromium is installed (Debian's package) when missing and we are root; the test is skipped,
with the reason, only where that is impossible.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps

from pytest_ssd.cli.sections import declared_sections
from pytest_ssd.db import RunInfo
from pytest_ssd.report.build import page
from pytest_ssd.report.sections import build
from tests.browser import VIEWPORT_HEIGHT as FIRST_SCREEN
from tests.browser import check_page
from tests.e2e.browsing import PNG_MAGIC, READING_WIDTH
from tests.unit.test_sections_csd import load, slower

# The report's own sections, the smoke suite's section, and pytest-html's results table.
REQUIRED = ("#ssd-devices", "#ssd-environment", "#ssd-suite-smoke", "#results-table")


def test_report_renders_in_chromium(chromium: str, run_ssd: Any, artifacts: Path) -> None:
    run = run_ssd("--dut=scratch:256M")
    run.result.assert_outcomes(passed=4)

    screenshot = artifacts / "report.png"
    check = check_page(
        run.run_dir / "report.html",
        (*REQUIRED, "#ssd-summary", "#ssd-key-results", "#ssd-results", "#environment"),
        screenshot=screenshot,
        width=READING_WIDTH,
        sections_to=artifacts / "sections",
    )
    print(f"screenshot: {screenshot}")
    print(f"sections: {check.sections}; images: {check.images}; tops: {check.tops}")

    assert check.problems() == [], "\n".join(check.problems())
    # the key results open the page, in the first screen; pytest-html's environment after
    assert check.tops["#ssd-summary"] < FIRST_SCREEN / 2, check.tops
    # the key results (headline numbers, verdicts, warnings) begin in the first screen
    assert check.tops["#ssd-key-results"] < FIRST_SCREEN, check.tops
    assert check.tops["#ssd-key-results"] < check.tops["#ssd-devices"], "devices after results"
    # each test's graph shown whole and readable at 100 %, not a 320 px thumbnail
    print(f"test graphs: {check.test_graphs}")
    assert check.test_graphs, "the smoke tests' graphs are in the results table"
    narrow = {name: width for name, width in check.test_graphs.items() if width < 600}
    assert not narrow, narrow
    assert check.tops["#environment"] > check.tops["#results-table"], check.tops
    assert check.images >= 1, "the summary chart at least"
    data = screenshot.read_bytes()
    assert data.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width >= 800 and height >= 600, (width, height)
    assert len(data) > 20_000, "a rendered page, not a blank one"
    # the contents: every section, every figure and pytest-html's results, one click away
    assert {"ssd-devices", "ssd-suite-smoke", "ssd-results"} <= set(check.links)
    assert check.figures and set(check.figures) <= set(check.links)
    assert set(check.section_shots) == set(check.sections)
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in check.section_shots.values())
    html = (run.run_dir / "report.html").read_text()
    assert "No log output captured." not in html, "a test that printed nothing has no log box"


def test_a_two_drive_csd_report_reads_in_a_1400_px_window(chromium: str, artifacts: Path) -> None:
    # the widest figures of all: every csd comparison with two drives (golden quick-run results)
    fast = load()
    drives = [fast, slower(load("slow drive", "run-b"))]
    run = RunInfo("run-a", "2026-11-25T00:00:00", None, True, {}, "", {}, (fast.drive,))
    sections = build(drives, 1, [run], artifacts / "figures", declared_sections())
    path = artifacts / "csd.html"
    path.write_text(page("two drives", "".join(s.html() for s in sections)))

    check = check_page(
        path,
        ("#ssd-summary", "#ssd-suite-csd"),
        screenshot=artifacts / "csd.png",
        width=READING_WIDTH,
        sections_to=artifacts / "sections",
        timeout=120,
    )
    print(f"sections: {check.sections}; images: {check.images}; shots: {artifacts / 'sections'}")
    assert check.problems() == [], "\n".join(check.problems())
    assert len(check.figures) == check.images > 20
    assert set(check.figures) <= set(check.links), "every graph is linked from the contents"
    tiles = sorted((artifacts / "sections").glob("ssd-suite-csd*.png"))
    assert len(tiles) >= 3, "a section taller than one capture goes on in tiles"
    for tile in tiles:  # every tile shows the report, none is left blank past the viewport
        with Image.open(tile) as shot:
            assert ImageOps.invert(shot.convert("RGB")).getbbox() is not None, tile.name
