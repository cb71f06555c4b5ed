"""Verdicts from the database: compare --gate's table and exit code, the report's section."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import main
from pytest_ssd.cli.sections import declared_sections
from pytest_ssd.db import ResultsDb, RunInfo, RunWriter, TestRecords
from pytest_ssd.report.build import gather
from pytest_ssd.report.sections import build
from pytest_ssd.results.record import Derived
from pytest_ssd.verdict.judge import MetricVerdict
from pytest_ssd.verdict.reference import runs_of
from pytest_ssd.verdict.source import compare_runs, pair_drives
from tests.unit.db_fixtures import CORNERS, corner, description, write_run
from tests.unit.test_sections_csd import load

#: five repeats' spread around a corner's IOPS (1 %)
SPREAD = (1.0, 1.004, 0.996, 1.01, 0.99)


def write_repeated(
    db: Path,
    run_id: str,
    label: str,
    slow: dict[str, float],
    environment: dict[str, Any] | None = None,
    *,
    factors: tuple[float, ...] = SPREAD,
) -> None:
    """Four corners, each run once per factor (5 times); a corner in *slow* at that share of
    its IOPS."""
    writer = RunWriter(db, run_id, db.parent / run_id, environment or {"host": "lab"})
    build = label.removeprefix("fw ")  # the build under test: "fw 2" measured build 2
    writer.add_device("d0", {**description("d0", label), "build": build}, label)
    for number, shape in enumerate(CORNERS):
        iops = 1000.0 * (number + 1) * slow.get(shape[0], 1.0)
        runs = [corner("d0", shape, iops * k) for k in factors]
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
    test = "suites/smoke/test_corners.py::test_four_corners[rnd-read]"
    lines = table.splitlines()
    drive = lines.index("== fw 2 (d0), build 2 against 1")  # both sides' builds named
    worst = lines[drive + 1]  # IOPS and MiB/s moved alike: either is the worst
    assert worst.startswith(f"regressed  {test} · rnd-read read "), worst
    assert ": 0.50× the baseline (95 % CI" in worst, "the drive, then its worst line first"
    assert not any(line.startswith("same ") for line in lines), "'same' is counted, not listed"
    assert lines[-2:] == [
        "fw 2 (d0), build 2 against 1: 2 regressed, 0 improved, 26 same, 0 unknown",
        "gate failed: fw 2 (d0) regressed",
    ]
    assert 'id="ssd-baseline"' in out.read_text()
    # the other way round: an improvement, and the gate passes
    assert main(["--db", str(db), "compare", "fw 2", "fw 1", "--gate", "-o", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "fw 1 (d0), build 1 against 2: 0 regressed, 2 improved, 26 same, 0 unknown",
        "gate passed: no regression",
    ]


def test_a_gate_that_judged_nothing_fails_unless_unknown_is_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    write_run(db, "run-a", "one")
    write_run(db, "run-b", "other")
    gate = ["--db", str(db), "compare", "one", "other", "--gate", "-o", str(tmp_path / "c.html")]
    assert main(gate) == 5
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == (
        "gate failed: not judged: other (d0) (100 % unknown) (at most 0 % allowed, --allow-unknown)"
    )
    assert (
        said[-2]
        == "  run 3 more repeats a side (--ssd-repeat=4 on both builds) to decide 28 unknown"
    )
    assert main([*gate, "--allow-unknown=50"]) == 5
    capsys.readouterr()
    assert main([*gate, "--allow-unknown"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "gate passed: no regression, unknown within the 100 % allowed"
    )
    with pytest.raises(SystemExit, match="2"):
        main([*gate, "--allow-unknown=101"])
    assert "--allow-unknown: '101' is not a percent from 0 to 100" in capsys.readouterr().err


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
    sections = {s.id for s in build(drives, 1, runs, tmp_path / "figures", declared_sections())}
    assert "ssd-pair" in sections and "ssd-baseline" not in sections


def test_a_run_under_xdist_compares_with_one_without() -> None:
    plain = corner("d0", CORNERS[2], 1000.0)
    grouped = replace(plain, test=f"{plain.test}@dut-d0")  # xdist's loadgroup suffix
    key = "suites/smoke/test_corners.py::test_four_corners[rnd-read]::rnd-read"
    assert list(runs_of([plain], "d0")) == list(runs_of([grouped], "d0")) == [key]


def _recorded(dut_id: str, verdicts: list[MetricVerdict]) -> Derived:
    values = {"against": "run a, fw 1", "verdicts": [v.as_dict() for v in verdicts]}
    return Derived(
        test="suites/csd/test_qd.py::test_rnd[qd1]", device=dut_id, name="baseline", values=values
    )


def test_the_report_has_a_part_per_drive_worst_first_with_the_state_group(tmp_path: Path) -> None:
    def verdict(verdict: str, ratio: float, state: str) -> MetricVerdict:
        return MetricVerdict(
            "rnd-4k-qd1", "read", "iops", verdict, 5, 5, 0.05, ratio, ratio * 0.98,
            ratio * 1.02, 0.004, 0.9, test="csd/test_qd.py::test_rnd[qd1]", state=state,
        )  # fmt: skip

    first, second = load("fw 2", "run-b"), load("fw 2", "run-b")
    second.drive = replace(second.drive, dut_id="other")
    first.derived = [_recorded(first.drive.dut_id, [verdict("same", 1.0, "cssd1")])]
    second.derived = [
        _recorded(
            "other",
            [verdict("same", 1.01, "cssd1")] + [verdict("regressed", 0.5, "cssd2")] * 30,
        )
    ]
    run = RunInfo("run-b", "2026-11-25T00:00:00", None, True, {}, "", {}, ())
    _, *sections = build([first, second], 2, [run], tmp_path, declared_sections())
    (section,) = [s for s in sections if s.id == "ssd-baseline"]
    parts = re.findall(r"<h3[^>]*>([^<]*)</h3>", section.body)
    assert parts == [
        f"{first.drive.name}: 0 regressed, 0 improved, 1 same, 0 unknown",
        f"{second.drive.name}: 30 regressed, 0 improved, 1 same, 0 unknown",
    ]
    other = section.body[section.body.index(parts[1]) :]
    states = re.findall(r"<tr><td>(cssd\d)</td><td>csd/test_qd.py", other)
    assert states == ["cssd2"] * 30 + ["cssd1"], "worst first, the state group in each row"
    assert "(the 24 worst of 31)" in other, "a figure that fits a screen"


def _two_drives(db: Path, run_id: str, label: str, order: tuple[str, str]) -> None:
    """Two drives, serials S1 (1,000 IOPS) and S2 (2,000), as devices d0 and d1 in *order*."""
    writer = RunWriter(db, run_id, db.parent / run_id, {"host": "lab"})
    for dut, serial in zip(("d0", "d1"), order, strict=True):
        writer.add_device(dut, description(dut, label, serial), label)
        iops = {"S1": 1000.0, "S2": 2000.0}.get(serial, 3000.0)
        runs = [corner(dut, CORNERS[2], iops * k) for k in SPREAD]
        runs = [replace(m, workload={**m.workload, "repeat": i + 1}) for i, m in enumerate(runs)]
        writer.add(TestRecords(runs[0].test.replace("]", f"-{dut}]"), measurements=runs))
    writer.finish({"passed": 2}, complete=True)


def test_drives_are_paired_by_what_they_are_never_by_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    _two_drives(db, "run-a", "fw 1", ("S1", "S2"))
    _two_drives(db, "run-b", "fw 2", ("S2", "S1"))  # the --dut order swapped
    with ResultsDb(db) as found:
        verdicts = compare_runs(found, "run-a", "run-b")
    iops = {drive.drive: v.verdict for drive, v in verdicts if v.metric == "iops"}
    assert iops == {"fw 2 (d0)": "same", "fw 2 (d1)": "same"}, "by id: 2x and 0.5x"
    _two_drives(db, "run-c", "fw 3", ("S1", "S3"))  # a drive the baseline never measured
    with ResultsDb(db) as found:
        verdicts = compare_runs(found, "run-a", "run-c")
    assert {drive.drive for drive, _ in verdicts} == {"fw 3 (d0)"}, "S3 is not judged against S2"
    assert pair_drives([("serial S1", "a"), ("serial S2", "b")], [("d0", "serial S3")]) == (
        {},
        ["d0 (serial S3) is not judged: the baseline run did not measure that drive"
         " (it measured serial S1, serial S2)"],
    )  # fmt: skip


def write_interleaved(db: Path, run_id: str, drift: float) -> None:
    """Four corners, 10 repeats each, the IOPS moved by *drift* per repeat (0: a steady host)."""
    spread = (1.0, 1.004, 0.996, 1.01, 0.99, 1.002, 0.998, 1.006, 0.994, 1.008)
    factors = tuple(k * (1 + drift * i) for i, k in enumerate(spread))
    write_repeated(db, run_id, "fw 1", {}, factors=factors)


def test_calibrate_judges_a_run_against_itself_interleaved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A/A: a steady run's even repeats against its odd ones are "same" everywhere (exit 0);
    a host that slows the drive 5 % a repeat shows in both halves alike (interleaved), so
    the ratio stays near 1, and no false claim comes of it."""
    db = tmp_path / "results.sqlite"
    write_interleaved(db, "steady", 0.0)
    assert main(["--db", str(db), "calibrate", "steady"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "steady: even repeats against odd repeats (interleaved as taken)"
    assert "fw 1 (d0): regressed 0 %, improved 0 %, same 100 %, unknown 0 % of 28 lines" in out
    assert out[-1] == "calibration passed: no false claim"
    write_interleaved(db, "drifting", -0.05)
    assert main(["--db", str(db), "calibrate", "drifting"]) == 0
    out = capsys.readouterr().out.splitlines()
    # the throughputs slid 45 % over the run: their halves differ by one step (0.95×) and
    # the spread is called too wide; the latencies, untouched, stay "same"
    assert "fw 1 (d0): regressed 0 %, improved 0 %, same 71 %, unknown 29 % of 28 lines" in out
    unknown = [line for line in out if line.startswith("unknown ")]
    assert len(unknown) == 8 and all("0.95× the baseline" in line for line in unknown)
    assert all("too wide to call it the same" in line for line in unknown)


def test_calibrate_needs_four_repeats_a_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    write_repeated(db, "five", "fw 1", {})  # 3 odd against 2 even: no interval
    assert main(["--db", str(db), "calibrate", "five"]) == 5
    out = capsys.readouterr().out
    assert "same 0 %, unknown 100 %" in out
    assert out.splitlines()[-1].startswith("calibration not judged: no line was 'same'")


def test_calibrate_two_runs_of_one_build_gives_the_bands_the_host_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of one build, the second's random reads 15 % faster throughout (as measured
    here on a loop device, each run's repeats within 1 %): the gate's judgement claims a
    change, so the calibration fails and says the band that would have claimed nothing."""
    db = tmp_path / "results.sqlite"
    write_repeated(db, "first", "fw 1", {})
    write_repeated(db, "second", "fw 1", {"rnd-read": 1.15})
    assert main(["--db", str(db), "calibrate", "first", "second"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "second against first: one build, two runs"
    improved = [line for line in out if line.startswith("improved ")]
    assert len(improved) == 2 and all("rnd-read read" in line for line in improved)
    assert "bands (a datasheet's [baseline], or --tolerance METRIC=PERCENT):" in out
    (iops,) = [line for line in out if line.startswith("  iops: ")]
    near, far = (float(x) for x in re.findall(r"±([\d.]+) %", iops))
    assert 13 < near < 15 < far < 17, iops  # the interval of 1.15× with a 1 % spread
    assert out[-1].startswith("calibration failed: an unchanged drive was judged changed")
    banded = ["--tolerance", f"iops={far}", "--tolerance", f"bw_mib_s={far}"]
    assert main(["--db", str(db), "calibrate", "first", "second", *banded]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "calibration passed: no false claim"
    assert main(["--db", str(db), "calibrate", "first", "second", "third"]) == 2
