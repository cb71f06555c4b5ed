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
        ("impossible-read", "not met"), ("easy-read", "met"),
    ], "failures first"  # fmt: skip
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
