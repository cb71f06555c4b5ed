"""Verdicts from the database: compare --gate's table and exit code, the report's section."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_ssd.cli import main
from pytest_ssd.db import ResultsDb, RunWriter, TestRecords
from pytest_ssd.report.build import gather
from pytest_ssd.report.sections import build
from pytest_ssd.verdict.baseline import runs_of
from pytest_ssd.verdict.source import compare_runs
from tests.unit.db_fixtures import CORNERS, corner, description, write_run

#: five repeats' spread around a corner's IOPS (1 %)
SPREAD = (1.0, 1.004, 0.996, 1.01, 0.99)


def write_repeated(db: Path, run_id: str, label: str, slow: dict[str, float]) -> None:
    """Four corners, each run 5 times; a corner in *slow* at that share of its IOPS."""
    writer = RunWriter(db, run_id, db.parent / run_id, {"host": "lab"})
    writer.add_device("d0", description("d0", label), label)
    for number, shape in enumerate(CORNERS):
        iops = 1000.0 * (number + 1) * slow.get(shape[0], 1.0)
        runs = [corner("d0", shape, iops * k) for k in SPREAD]
        runs = [replace(m, workload={**m.workload, "repeat": i + 1}) for i, m in enumerate(runs)]
        writer.add(TestRecords(runs[0].test, measurements=runs))
        writer.test_done(runs[0].test, "passed", 3.0, None)
    writer.finish({"passed": len(CORNERS)}, complete=True)


def test_the_gate_fails_on_the_slowed_corner_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    write_repeated(db, "run-a", "fw 1", {})
    write_repeated(db, "run-b", "fw 2", {"rnd-read": 0.5})
    with ResultsDb(db) as found:
        verdicts = compare_runs(found, "fw 1", "fw 2")
    regressed = {(v.point, v.metric) for _, v in verdicts if v.verdict == "regressed"}
    assert regressed == {("rnd-read", "iops"), ("rnd-read", "bw_mib_s")}
    others = {v.verdict for _, v in verdicts if v.point != "rnd-read"}
    assert others == {"same"}, "the latencies and the other corners did not move"
    out = tmp_path / "c.html"
    assert main(["--db", str(db), "compare", "fw 1", "fw 2", "--gate", "-o", str(out)]) == 1
    table = capsys.readouterr().out
    assert "regressed  fw 2: rnd-read read IOPS: 0.50× the baseline (95 % CI" in table
    assert table.splitlines()[-1].startswith("2 regressed, 0 improved,")
    assert 'id="ssd-baseline"' in out.read_text()
    # the other way round: an improvement, and the gate passes
    assert main(["--db", str(db), "compare", "fw 2", "fw 1", "--gate", "-o", str(out)]) == 0
    assert "2 improved" in capsys.readouterr().out


def test_the_gate_takes_two_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "results.sqlite"
    write_run(db, "run-a", "one")
    assert main(["--db", str(db), "compare", "one", "--gate"]) == 2
    assert capsys.readouterr().err.strip() == (
        "pytest-ssd: compare --gate takes two labels, BASE NEW (given: 1)"
    )


def test_one_run_each_is_unknown_and_makes_no_section(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    write_run(db, "run-a", "one")
    write_run(db, "run-b", "other", scale=0.5)
    with ResultsDb(db) as found:
        verdicts = compare_runs(found, "one", "other")
        drives, runs = gather(found, found.run("run-a").drives, found.resolve(["other"]))
    assert verdicts and {v.verdict for _, v in verdicts} == {"unknown"}
    sections = {s.id for s in build(drives, 1, runs, tmp_path / "figures")}
    assert "ssd-pair" in sections and "ssd-baseline" not in sections


def test_a_run_under_xdist_compares_with_one_without() -> None:
    plain = corner("d0", CORNERS[2], 1000.0)
    grouped = replace(plain, test=f"{plain.test}@dut-d0")  # xdist's loadgroup suffix
    key = "suites/smoke/test_corners.py::test_four_corners[rnd-read]::rnd-read"
    assert list(runs_of([plain], "d0")) == list(runs_of([grouped], "d0")) == [key]
