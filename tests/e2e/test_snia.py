"""suites/snia end to end on a 1 GiB scratch device (quick profile): the PTS round loop for real.

Every test starts from a purge and WIPC, runs rounds of one fio process each
until the SNIA rule holds or the quick cap of 6 rounds, and reports the
verdict with its window; the report has the SNIA section with every page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.browsing import reads_in_a_window
from tests.e2e.conftest import REPO
from tests.e2e.latencies import table_after, unscaled

SNIA = REPO / "suites" / "snia"
TESTS = {"snia-iops": 9, "snia-throughput-1MiB": 2, "snia-throughput-128KiB": 2, "snia-latency": 9}
PAGES = ("convergence", "window", "rounds")


def test_snia_quick_reports_steady_state_and_its_window(
    run_ssd: Any, chromium: str, artifacts: Path
) -> None:
    run = run_ssd("--dut=scratch:1G", suite=SNIA, timeout=600)
    run.result.assert_outcomes(passed=4)
    data = run.results()
    derived = {d["name"]: d["values"] for d in data["derived"] if d["name"] in TESTS}
    assert set(derived) == set(TESTS)
    for name, cells in TESTS.items():
        v = derived[name]
        assert 5 <= len(v["values"]) <= 6, name
        assert v["attained"] or v["exhausted"], v["summary"]
        assert v["window_values"] == v["values"][-5:], "the window is the last 5 rounds"
        assert v["range_limit_pct"] == 20 and v["slope_limit_pct"] == 10
        assert len(v["window"]) == cells and all(c["iops"] > 0 for c in v["window"])
    # the last round's cells are the tests' measurements
    assert len(data["measurements"]) == sum(TESTS.values())
    for transition in data["transitions"]:
        kinds = [s["kind"] for s in transition["steps"] if s["kind"] != "idle"]
        assert transition["target"] == "wipc" and kinds[-1] == "fio"
    assert len(data["transitions"]) == 4, "a fresh purge and WIPC for every test"
    html = (run.run_dir / "report.html").read_text()
    assert 'id="ssd-suite-snia"' in html and "steady state" in html
    missing = [
        f"{name} {page}"
        for name in TESTS
        for page in PAGES
        if f"{name} {page}: scratch" not in html
    ]
    assert not missing, missing
    assert "R/W mix \\ IOPS (IOPS)" in html and "p99.999 completion latency (clat)" in html
    assert_latencies_scaled(html[html.index('id="ssd-suite-snia"') :])
    reads_in_a_window(run.run_dir / "report.html", "ssd-suite-snia", artifacts)


def assert_latencies_scaled(section: str) -> None:
    """The latency test's steady-state row (window values, mean, slope) and its three
    per-cell tables (mean, p99.999, max) each in their unit, no column in bare µs."""
    part = section[section.index("0/100 mean completion latency (clat)") :]
    header, (steady, *_) = table_after(part, "<table")
    values, mean = steady[header.index("window values")], steady[header.index("mean")]
    assert unscaled([*values.split(", "), mean]) == [], steady
    slope = steady[header.index("fitted slope")]
    assert slope.endswith(f" {mean.split()[-1]}/round"), f"{slope}: in the mean's unit"
    for what in ("mean", "p99.999", "max"):
        marker = part.index(f"R/W mix \\ {what} completion latency (clat)</th>")
        header, rows = table_after(part[part.rindex("<table", 0, marker) :], "<table")
        assert len(rows) == 3 and all(len(r) == 4 for r in rows), rows
        assert unscaled([c for r in rows for c in r[1:]]) == [], rows
