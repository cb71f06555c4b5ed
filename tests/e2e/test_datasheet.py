"""suites/datasheet end to end: spec lines as tests, verdicts, and bad datasheets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO

SUITE = REPO / "suites" / "datasheet"
HEAD = '[drive]\nname = "test drive"\nmodel = ["{model}"]\ncapacity_gb = 0.134\n'
LINE = """
[[specs]]
id = "{id}"
metric = "iops"
unit = "IOPS"
pattern = "rnd"
direction = "read"
block_size = "4KiB"
qd = 32
state = "fob"
value = {value}
kind = "ceiling"
"""


def _sheet(tmp_path: Path, *lines: tuple[str, int], model: str = "*") -> Path:
    head = HEAD.format(model=model)
    path = tmp_path / "sheet.toml"
    path.write_text(head + "".join(LINE.format(id=i, value=v) for i, v in lines))
    return path


def test_lines_met_pass_and_lines_not_met_fail_with_the_ratio(run_ssd: Any, tmp_path: Path) -> None:
    # scratch does thousands of IOPS: 100 is met, a billion is not
    sheet = _sheet(tmp_path, ("easy-read", 100), ("impossible-read", 10**9))
    run = run_ssd("--dut=scratch:128M", f"--datasheet={sheet}", "--datasheet-force", suite=SUITE)
    run.result.assert_outcomes(passed=1, failed=1)
    out = run.result.stdout.str()
    assert "RND read QD32 4KiB:" in out and "% of spec 1,000,000,000 IOPS (needs ≥ 90 %)" in out
    rows = run.results()["conformance"]
    assert [(r["id"], r["verdict"]) for r in rows] == [
        ("impossible-read", "not met"),
        ("easy-read", "met"),
    ], "failures first"
    assert rows[1]["ratio"] > 1 and rows[1]["measured"] > 100
    html = (run.run_dir / "report.html").read_text()
    assert "Datasheet conformance" in html and "not met" in html


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[drive\nname = 1", "line 1"),
        (
            HEAD.format(model="*") + LINE.format(id="x", value=1).replace('"iops"', '"speed"'),
            "specs[0].metric",
        ),
    ],
    ids=["toml-syntax", "unknown-metric"],
)
def test_bad_datasheet_is_one_line_before_any_device_is_touched(
    run_ssd: Any, tmp_path: Path, text: str, needle: str
) -> None:
    sheet = tmp_path / "bad.toml"
    sheet.write_text(text)
    run = run_ssd("--dut=scratch:64M", f"--datasheet={sheet}", suite=SUITE)
    assert run.result.ret == 4
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and str(sheet) in errors[0] and needle in errors[0], errors
    assert "Traceback" not in run.result.stderr.str()
    assert not list((tmp_path / "reports").glob(".scratch/*.img")), "no scratch device made"


def test_datasheet_for_another_drive_is_refused_unless_forced(run_ssd: Any, tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, ("easy-read", 100), model="Samsung SSD 850*")
    run = run_ssd("--dut=scratch:128M", f"--datasheet={sheet}", suite=SUITE)
    assert run.result.ret == 4
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "does not match" in errors[0] and "force" in errors[0], errors


P99999 = """
[[specs]]
id = "tail-read"
metric = "latency-p99.9999"
unit = "ms"
pattern = "rnd"
direction = "read"
block_size = "4KiB"
qd = 1
state = "fob"
value = 1000
kind = "bound"
"""


def test_a_percentile_the_sample_cannot_resolve_is_not_judged(run_ssd: Any, tmp_path: Path) -> None:
    # quick: 3 s at QD1 on scratch is some 10^5 I/Os, never the 10^6 a p99.9999 needs
    sheet = tmp_path / "sheet.toml"
    sheet.write_text(HEAD.format(model="*") + P99999)
    run = run_ssd(
        "--dut=scratch:128M", f"--datasheet={sheet}", "--datasheet-force", "-rs", suite=SUITE
    )
    run.result.assert_outcomes(skipped=1)
    out = run.result.stdout.str()
    assert (
        "RND read QD1 4KiB p99.9999 latency: not judged: p99.9999 needs ≥ 1,000,000 I/Os, had"
        in out
    )
    (row,) = run.results()["conformance"]
    assert (row["verdict"], row["measured"], row["ratio"]) == ("not judged", None, None)
    assert row["reason"].startswith("p99.9999 needs ≥ 1,000,000 I/Os, had ")
    html = (run.run_dir / "report.html").read_text()
    assert "not judged" in html and "n/r" in html


def test_a_suite_naming_a_line_its_datasheet_lacks_stops_at_collection(
    run_ssd: Any, tmp_path: Path, pytester: pytest.Pytester
) -> None:
    sheet = _sheet(tmp_path, ("easy-read", 100))
    pytester.makeconftest("pytest_ssd_suite = True\n")
    pytester.makepyfile(
        test_mine="""
import pytest
from pytest_ssd.fio.job import FioJob

@pytest.mark.ssd_spec("easy-read", "typo-read")
def test_mine(ssd):
    job = FioJob("r", "rnd", 4096, iodepth=32, size=64 << 20, runtime_s=1)
    ssd.assert_meets_spec("easy-read", ssd.run(job))
"""
    )
    args = ("--dut=scratch:128M", f"--datasheet={sheet}", "--datasheet-force")
    run = run_ssd(*args, suite=pytester.path)
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert run.result.ret == 4 and len(errors) == 1, run.result.errlines
    assert "no spec line 'typo-read' (its lines: easy-read)" in errors[0]
    assert "Traceback" not in run.result.stdout.str() + run.result.stderr.str()
    (pytester.path / "test_mine.py").write_text(
        (pytester.path / "test_mine.py").read_text().replace(', "typo-read"', "")
    )
    run = run_ssd(*args, suite=pytester.path)
    run.result.assert_outcomes(passed=1)
    (row,) = run.results()["conformance"]
    assert (row["id"], row["verdict"]) == ("easy-read", "met")


def test_a_fob_read_line_reads_written_lbas_only(
    run_ssd: Any, tmp_path: Path, pytester: pytest.Pytester
) -> None:
    # a FOB read over never-written LBAs read holes at 240 % of spec: the span is written
    # first, in the same fio process, and the test says so
    sheet = _sheet(tmp_path, ("fob-read", 100))
    run = run_ssd(
        "--dut=scratch:128M",
        f"--datasheet={sheet}",
        "--datasheet-force",
        "--junitxml=j.xml",
        suite=SUITE,
    )
    run.result.assert_outcomes(passed=1)
    (jobfile,) = run.run_dir.glob("artifacts/*/*/fio.job")
    sections = [line for line in jobfile.read_text().splitlines() if line.startswith("[")]
    assert sections == ["[global]", "[prefill-1]", "[fob-read]"], sections
    text = jobfile.read_text()
    prefill = text[text.index("[prefill-1]") : text.index("[fob-read]")]
    assert "rw=write" in prefill and f"size={128 << 20}" in prefill and "offset=0" in prefill
    junit = (pytester.path / "j.xml").read_text()
    assert f'name="ssd.prefill.bytes" value="{128 << 20}"' in junit
    page = (run.run_dir / "report.html").read_text()
    assert "prefilled 128.0 MiB before the read ([0, 134,217,728))" in page


def test_a_suite_skipped_whole_says_why_without_rs(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:128M", suite=SUITE)
    run.result.assert_outcomes(skipped=1)
    out = run.result.stdout.str()
    reason = "no datasheet for scratch: give --datasheet=FILE or --datasheet-dir=DIR"
    assert f"skipped 1: {reason}" in out
    # with -rs pytest lists it: not twice
    run = run_ssd("--dut=scratch:128M", "-rs", suite=SUITE)
    out = run.result.stdout.str()
    assert "SKIPPED [1]" in out and "skipped 1: no datasheet" not in out


def test_a_per_tb_line_is_judged_per_decimal_tb_of_the_loop_devices_capacity(
    run_ssd: Any, tmp_path: Path
) -> None:
    # a product line's sheet: 64 MB and 134 MB drives, one figure per TB for both;
    # 745,000 IOPS per TB are 100 IOPS on scratch's 134,217,728 bytes (0.0001342 TB)
    sheet = tmp_path / "line.toml"
    head = HEAD.replace("capacity_gb = 0.134", "capacity_gb = [0.064, 0.134]")
    line = LINE.format(id="per-tb-read", value=745_000) + "per_tb = true\n"
    sheet.write_text(head.format(model="*") + line)
    force = "--datasheet-force"  # a loop device has no model to match
    run = run_ssd("--dut=scratch:128M", f"--datasheet={sheet}", force, "-v", suite=SUITE)
    out = run.result.stdout.str()
    run.result.assert_outcomes(passed=1)
    assert "Traceback" not in out + run.result.stderr.str()
    (row,) = run.results()["conformance"]
    tb = 134_217_728 / 10**12
    assert (row["verdict"], row["per_tb"], row["capacity_tb"]) == ("met", True, tb)
    assert row["measured"] == pytest.approx(row["measured_total"] / tb, rel=1e-6)
    assert row["ratio"] == pytest.approx(row["measured_total"] / tb / 745_000, rel=1e-6)
    assert row["message"].startswith("RND read QD32 4KiB: ")
    assert " IOPS on 0.0001342 TB = " in row["message"]
    assert "% of spec 745,000 IOPS per TB (needs ≥ 90 %)" in row["message"]
    html = (run.run_dir / "report.html").read_text()
    assert "745,000.0 IOPS per TB" in html, "the conformance table says per TB"
