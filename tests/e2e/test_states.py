"""Device states end to end: real purges, preconditioning and accounting on loop devices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

GiB, MiB = 1 << 30, 1 << 20

READ_IN_STATE = """
import pytest
from pytest_ssd.fio.job import FioJob


def read(ssd, region, name):
    r = ssd.region(region)
    job = FioJob(name, "rnd", 4096, iodepth=4, offset=r.offset, size=r.size, runtime_s=0.3)
    return ssd.run(job)
"""

TWO_STATES = (
    READ_IN_STATE
    + """

@pytest.mark.dut_state("wipc")
@pytest.mark.parametrize("n", range(5))
def test_in_wipc(ssd, n):
    assert read(ssd, "device", f"wipc-{n}").directions["read"].io_bytes > 0


@pytest.mark.dut_state("cssd")
@pytest.mark.parametrize("n", range(5))
def test_in_cssd(ssd, n):
    assert read(ssd, "rnd", f"cssd-{n}").directions["read"].io_bytes > 0
"""
)

CSSD_ONLY = (
    READ_IN_STATE
    + """

@pytest.mark.dut_state("cssd")
def test_cssd_regions(ssd):
    rnd, seq, trimmed = ssd.region("rnd"), ssd.region("seq"), ssd.region("trimmed")
    assert (rnd.offset, seq.offset, trimmed.end) == (0, rnd.end, ssd.dut.identity.size_bytes)
    assert seq.end == trimmed.offset
    read(ssd, "seq", "seq-read")
"""
)


def _suite(tmp_path: Path, text: str) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_states.py").write_text(text)
    return suite


def _allocated(path: Path) -> int:
    return path.stat().st_blocks * 512


def test_cssd_on_2g_loop_leaves_last_quarter_deallocated(
    run_ssd: Any, loop_device: Any, tmp_path: Path
) -> None:
    dev: Path = loop_device(2048, "cssd.img")
    backing = next(tmp_path.glob("*-cssd.img"))
    run = run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--ssd-profile=quick",
        suite=_suite(tmp_path, CSSD_ONLY),
    )
    run.result.assert_outcomes(passed=1)
    data = run.results()
    (transition,) = data["transitions"]
    assert (transition["source"], transition["target"]) == (None, "cssd")
    assert [s["kind"] for s in transition["steps"] if s["kind"] != "idle"] == [
        "purge",
        "fio",
        "fio",
        "discard",
    ]
    regions = {r["name"]: (r["offset"], r["size"]) for r in transition["layout"]["regions"]}
    assert regions == {
        "rnd": (0, 256 * MiB),  # 8 GiB or 1/8 of 2 GiB, whichever is smaller
        "seq": (256 * MiB, 1280 * MiB),
        "trimmed": (1536 * MiB, 512 * MiB),
    }
    # the sparse backing file holds the used 75 %: the purge and the trim punched the rest
    assert abs(_allocated(backing) / (2 * GiB) - 0.75) < 0.01, _allocated(backing)
    totals = transition["totals"]
    method = 2 * 2 * GiB + 256 * MiB  # 200 % SEQ + the RND region
    assert method <= totals["written"] <= 1.05 * method, totals
    assert totals["discarded"] >= 2 * GiB + 512 * MiB, "purge (whole device) + trim (last 25 %)"
    assert totals["fio_written"] == method
    html = (run.run_dir / "report.html").read_text()
    assert "Device state transitions" in html and "discard the last 25 %" in html
    out = run.result.stdout.str()
    assert "plan for " in out and "total: 1 purge(s), 1 preconditioning(s)" in out


def test_ten_tests_two_states_two_purges_two_preconditionings(
    run_ssd: Any, loop_device: Any, tmp_path: Path
) -> None:
    dev: Path = loop_device(256)
    run = run_ssd(
        f"--dut={dev}",
        f"--ssd-confirm={dev}",
        "--ssd-profile=quick",
        "-v",
        suite=_suite(tmp_path, TWO_STATES),
    )
    run.result.assert_outcomes(passed=10)
    transitions = run.results()["transitions"]
    assert [t["target"] for t in transitions] == ["cssd", "wipc"], "method order: cssd first"
    purges = sum(1 for t in transitions for s in t["steps"] if s["kind"] == "purge")
    assert purges == 2 and len(transitions) == 2
    ran = [line for line in run.result.outlines if "PASSED" in line]
    assert all("in_cssd" in line for line in ran[:5]), ran
    assert all("in_wipc" in line for line in ran[5:]), ran


def test_scratch_starts_fresh_and_collect_only_plans_without_touching(
    run_ssd: Any, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, TWO_STATES)
    run = run_ssd("--dut=scratch:256M", "--collect-only", suite=suite)
    out = run.result.stdout.str()
    assert run.result.ret == 0
    assert "cssd       from fob" in out, out
    assert "wipc       from cssd" in out and "purge" in out
    assert not (tmp_path / "reports").exists(), "--collect-only creates nothing"


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('"hot"', "unknown device state 'hot'"),
        ('"ss(rnd-4x-write)"', "workload 'rnd-4x-write'"),
        ('"cssd", fresh=True', "unknown argument(s) fresh"),
    ],
)
def test_bad_state_marker_is_one_line_before_any_device_is_touched(
    run_ssd: Any, tmp_path: Path, marker: str, message: str
) -> None:
    text = f"import pytest\n\n@pytest.mark.dut_state({marker})\ndef test_x(ssd):\n    pass\n"
    run = run_ssd("--dut=scratch:64M", suite=_suite(tmp_path, text))
    assert run.result.ret == 4
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0] and "test_x" in errors[0], errors


STEADY = (
    READ_IN_STATE
    + """

@pytest.mark.dut_state("ss(rnd-4k-write-qd16)")
def test_fio_rule(ssd):
    read(ssd, "device", "after-fio-rule")


@pytest.mark.dut_state("ss(seq-128k-write-qd16, snia)")
def test_snia_rule(ssd):
    read(ssd, "device", "after-snia-rule")
"""
)


def test_steady_states_by_both_rules_carry_their_verdicts_and_graphs(
    run_ssd: Any, tmp_path: Path
) -> None:
    run = run_ssd("--dut=scratch:128M", suite=_suite(tmp_path, STEADY), timeout=600)
    run.result.assert_outcomes(passed=2)
    data = run.results()
    steady = [s for t in data["transitions"] for s in t["steps"] if s["kind"] == "steady"]
    assert [s["name"] for s in steady] == ["ss-rnd-4k-write-qd16", "ss-seq-128k-write-qd16"]
    fio_rule, snia = steady
    assert fio_rule["detail"].startswith("fio steady state ")
    assert fio_rule["verdict"]["duration_s"] >= 2 and fio_rule["fio_written"] > 0
    window = snia["verdict"]
    assert len(window["values"]) >= 5 and len(window["window_values"]) == 5
    assert window["range_limit_pct"] == 20 and window["slope_limit_pct"] == 10
    assert snia["detail"].startswith(("steady state reached", "steady state not reached"))
    assert len(snia["figures"]) == 2 and all(Path(f).is_file() for f in snia["figures"])
    assert (run.run_dir / "report.html").read_text().count("steady-state") >= 3
