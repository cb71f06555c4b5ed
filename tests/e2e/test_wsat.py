"""suites/wsat end to end, quick profile: write saturation on scratch, skips elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.browsing import reads_in_a_window
from tests.e2e.conftest import REPO

WSAT = REPO / "suites" / "wsat"
NAMES = ("wsat-rnd-4k-write", "wsat-seq-512b-50r")


def test_wsat_quick_on_scratch_reports_both_graphs(
    run_ssd: Any, chromium: str, artifacts: Path
) -> None:
    run = run_ssd("--dut=scratch:1G", suite=WSAT, timeout=300)
    run.result.assert_outcomes(passed=2)
    data = run.results()
    derived = {d["name"]: d["values"] for d in data["derived"] if d["name"] in NAMES}
    assert set(derived) == set(NAMES)
    for v in derived.values():
        assert v["amount_bytes"] == 4 << 30, "4 x the 1 GiB span"
        assert v["ended_by"] in ("amount", "time cap") and v["written_bytes"] > 0
        if v["ended_by"] == "time cap":
            assert v["runtime_s"] >= 0.98 * v["time_cap_s"] == 0.98 * 20
        region = v["region"]
        assert region["round_s"] == 1 and len(region["rounds"]) >= 5
        assert region["reached"] == bool(region["spans"])
    assert [t["target"] for t in data["transitions"]].count("fob") == 1, "pristine FOB again"
    html = (run.run_dir / "report.html").read_text()
    assert 'id="ssd-suite-wsat"' in html
    for name in NAMES:
        assert f"{name} iops vs time" in html and f"{name} iops vs written" in html
    reads_in_a_window(run.run_dir / "report.html", "ssd-suite-wsat", artifacts)


def test_wsat_skips_a_consumer_drive(run_ssd: Any, loop_device: Any) -> None:
    dev: Path = loop_device(64)
    run = run_ssd(
        f"--dut={dev}", f"--ssd-confirm={dev}", "--dut-class=cssd", "-rs", suite=WSAT, timeout=120
    )
    run.result.assert_outcomes(skipped=2)
    assert "suites/wsat applies to essd-wi drives" in run.result.stdout.str()
    assert run.results()["transitions"] == [], "skipped before any state was reached"
