"""The drive's health as a verdict, on devices without a health log (the NVMe cases run
in the QEMU guest: tests/e2e/test_nvme_guest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import REPO

SMOKE = REPO / "suites" / "smoke"


def test_a_loop_device_is_not_applicable_said_once_and_costs_nothing(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:128M", "-k", "seq-read or rnd-read", suite=SMOKE)
    out = run.result.stdout.str()
    run.result.assert_outcomes(passed=2)
    assert "Traceback" not in out + run.result.stderr.str() and "INTERNALERROR" not in out
    (device,) = run.results()["devices"].values()
    assert device["health_log"] == "a loop device has no health log"
    assert device["health_rules"] is None
    assert not [d for d in run.results()["derived"] if d["name"] == "ssd.health"], "no step"
    page = (run.run_dir / "report.html").read_text()
    assert page.count("not applicable: a loop device has no health log") == 1, "said once"
    assert 'id="ssd-health"' in page


def test_a_bad_health_profile_is_one_line_before_any_device_is_touched(
    run_ssd: Any, tmp_path: Path
) -> None:
    profile = tmp_path / "health.toml"
    profile.write_text('[health]\nmedia_errors = "unchanged"\npercentage_used = "grows"\n')
    run = run_ssd("--dut=scratch:128M", f"--ssd-health-profile={profile}", suite=SMOKE)
    assert run.result.ret == 4
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert errors == [
        f"ERROR: --ssd-health-profile: {profile}: health.percentage_used: 'grows' is no rule:"
        " use 'unchanged', '>= 80', '< warning_temperature' or 'delta <= 1'"
    ], errors
    assert "Traceback" not in run.result.stderr.str()
    assert not list((tmp_path / "reports").glob(".scratch/*.img")), "no scratch device made"
