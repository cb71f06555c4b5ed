"""Issue 29's configuration items end to end: what a device cannot take, and values refused
at configure time, before anything is touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO

USAGE_ERROR = 4
WSAT = REPO / "suites" / "wsat"
SNIA = REPO / "suites" / "snia"
SECTOR_4K = 4096


def _clean(run: Any) -> str:
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    return out


@pytest.fixture
def sector_4k(loop_device: Any) -> Path:
    """A 64 MiB loop device with 4 KiB sectors: 512 B I/O is refused by the kernel."""
    dev: Path = loop_device(64, sector_size=SECTOR_4K)
    return dev


def _wsat(run_ssd: Any, dev: Path, selection: str) -> Any:
    return run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--dut-class=essd-wi",
        "-rs",
        "-k",
        selection,
        suite=WSAT,
        timeout=240,
    )


def test_wsat_512b_point_on_a_4k_device_skips_before_its_purge(
    run_ssd: Any, sector_4k: Path
) -> None:
    run = _wsat(run_ssd, sector_4k, "512b")
    out = _clean(run)
    run.result.assert_outcomes(skipped=1)
    assert "512 B is smaller than the 4096 B logical block" in out
    assert "plan for" not in out, "a skipped point is not in the plan"
    assert run.results()["transitions"] == [], "no purge spent on it"


def test_wsat_on_a_4k_device_runs_the_4k_point_alone_in_the_plan(
    run_ssd: Any, sector_4k: Path
) -> None:
    run = _wsat(run_ssd, sector_4k, "512b or 4k")
    out = _clean(run)
    run.result.assert_outcomes(passed=1, skipped=1)
    assert "512 B is smaller than the 4096 B logical block" in out
    plan = out[out.index("pytest-ssd plan") :]
    assert "fob" in plan and "1 test(s)" in plan and "total: 1 purge(s)" in plan, plan
    transitions = run.results()["transitions"]
    assert [t["target"] for t in transitions] == ["fob"]
    assert "rnd-4k-write" in transitions[0]["test"]


def test_snia_latency_on_a_4k_device_leaves_out_its_512b_cells(
    run_ssd: Any, sector_4k: Path
) -> None:
    run = run_ssd(
        f"--dut={sector_4k}",
        f"--ssd-confirm={sector_4k}",
        "-k",
        "test_latency",
        suite=SNIA,
        timeout=400,
    )
    _clean(run)
    run.result.assert_outcomes(passed=1)
    data = run.results()
    derived = next(d["values"] for d in data["derived"] if d["name"] == "snia-latency")
    assert derived["block_sizes"] == [8192, 4096]
    assert all(cell["block_size"] >= SECTOR_4K for cell in derived["window"])
    assert derived["skipped"] == {"512B": "512 B is smaller than the 4096 B logical block"}
    assert [t["target"] for t in data["transitions"]] == ["wipc"]
