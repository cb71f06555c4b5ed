"""The band of "same" per metric: the datasheet's ``[baseline]``, its errors, the precedence."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from pytest_ssd.cli import main
from pytest_ssd.errors import ConfigError
from pytest_ssd.specs import load_datasheet
from pytest_ssd.verdict.judge import judge_point
from pytest_ssd.verdict.reference import Baseline
from pytest_ssd.verdict.tolerance import (
    DERIVED,
    SheetTolerances,
    Tolerances,
    parse_tolerance,
    parse_tolerances,
)
from tests.unit.test_specs_load import DRIVE, assert_refused, spec
from tests.unit.test_verdict_compare import write_repeated

TABLE = """
[baseline]
default = 10
iops = 5
p99.9_us = 40
"p99.99_us" = 80

[baseline.workload."rnd-*"]
default = 25
bw_mib_s = 30

[baseline.workload.rnd-read]
iops = 50
"""


def sheet(tmp_path: Path, table: str = TABLE) -> Path:
    path = tmp_path / "sheet.toml"
    path.write_text(table + "\n" + DRIVE + spec(), encoding="utf-8")
    return path


def test_the_table_reads_per_metric_per_workload_and_dotted_keys(tmp_path: Path) -> None:
    path = sheet(tmp_path)
    bands = load_datasheet(path).baseline
    assert bands is not None and bands.path == str(path)
    assert bands.band.default == pytest.approx(0.10)
    assert bands.band.metrics == pytest.approx({"iops": 0.05, "p99.9_us": 0.4, "p99.99_us": 0.8})
    assert [glob for glob, _ in bands.workloads] == ["rnd-*", "rnd-read"]
    assert load_datasheet(sheet(tmp_path, "")).baseline is None, "no table: none set"


def test_the_precedence_command_line_workload_metric_default_derived(tmp_path: Path) -> None:
    bands = load_datasheet(sheet(tmp_path)).baseline
    given = Tolerances({"p50_us": 0.02}, "--tolerance", bands)
    f = str(tmp_path / "sheet.toml")
    expected = {
        # the command line first
        ("rnd-read", "p50_us"): (0.02, "--tolerance p50_us"),
        # the first workload table whose glob matches, with a key for the metric or a default
        ("rnd-read", "bw_mib_s"): (0.30, f'{f} [baseline.workload."rnd-*"] bw_mib_s'),
        ("rnd-read", "iops"): (0.25, f'{f} [baseline.workload."rnd-*"] default'),
        ("rnd-write", "lat_mean_us"): (0.25, f'{f} [baseline.workload."rnd-*"] default'),
        # no workload matches: the sheet's metric, then its default
        ("seq-read", "iops"): (0.05, f"{f} [baseline] iops"),
        ("seq-read", "p99.9_us"): (0.40, f"{f} [baseline] p99.9_us"),
        ("seq-read", "lat_mean_us"): (0.10, f"{f} [baseline] default"),
    }
    for (point, metric), (band, source) in expected.items():
        found = given.pick(point, metric)
        assert found == (pytest.approx(band), source), (point, metric)
    # nothing set: derived from the runs' spread
    assert Tolerances().pick("seq-read", "iops") == (None, DERIVED)
    assert Tolerances({}, "--tolerance", SheetTolerances("x.toml")).pick("a", "iops")[0] is None


@pytest.mark.parametrize(
    ("table", "where", "problem"),
    [
        ("[baseline]\niops = -5\n", "baseline.iops", "must be a positive number of percent"),
        ("[baseline]\ndefault = 0\n", "baseline.default", "must be a positive number of percent"),
        ("[baseline]\niops = 'ten'\n", "baseline.iops", "must be a number (percent), not str"),
        ("[baseline]\niops = true\n", "baseline.iops", "must be a number (percent), not bool"),
        ("[baseline]\niops = inf\n", "baseline.iops", "must be a positive number of percent"),
        ("[baseline]\nlatency = 5\n", "baseline.latency", "unknown metric 'latency': use default"),
        ("[baseline]\np99.5_us = 5\n", "baseline.p99.5_us", "unknown metric 'p99.5_us'"),
        ('[baseline.workload."rnd-*"]\nbw = 5\n', 'baseline.workload."rnd-*".bw', "unknown"),
        ("[baseline]\nworkload = 5\n", "baseline.workload", "must be a table, not int"),
        ("baseline = 5\n", "baseline", "must be a table, not int"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_file_and_key(
    tmp_path: Path, table: str, where: str, problem: str
) -> None:
    assert_refused(sheet(tmp_path, table), where, problem)


def test_the_command_line_takes_any_positive_percent() -> None:
    assert parse_tolerance("p99.9_us=250") == ("p99.9_us", pytest.approx(2.5))
    for bad in ("p99_us=0", "p99_us=-3", "p99_us=x", "lat=5", "p99_us=nan"):
        with pytest.raises(ConfigError, match="give METRIC=PERCENT"):
            parse_tolerance(bad)


def _runs(iops: float) -> list[dict[str, object]]:
    spread = (1.0, 1.004, 0.996, 1.01, 0.99)
    return [{"read": {"iops": iops * k, "bw_mib_s": iops * k / 256}} for k in spread]


def test_a_band_set_in_the_sheet_turns_a_regression_into_same_and_says_so(
    tmp_path: Path,
) -> None:
    base, new = _runs(1000.0), _runs(800.0)  # 0.8x: regressed against a 5 % band
    derived = {v.metric: v for v in judge_point("rnd-read", base, new)}
    assert {m: v.verdict for m, v in derived.items()} == {
        "iops": "regressed",
        "bw_mib_s": "regressed",
    }
    assert derived["iops"].tolerance_from == DERIVED
    assert "band ±5 % derived from the runs' spread)" in derived["iops"].line()
    bands = parse_tolerances({"iops": 40}, "sheet.toml")
    judged = {v.metric: v for v in judge_point("rnd-read", base, new, Tolerances(sheet=bands))}
    assert judged["iops"].verdict == "same"
    assert judged["bw_mib_s"].verdict == "regressed", "a band for one metric alone"
    assert "band ±40 % from sheet.toml [baseline] iops)" in judged["iops"].line()
    # the run's bands travel to the workers in baseline.json, per device
    kept = Baseline("b", {"d0": "run 1"}, {}, {"iops": 0.01}, {"d0": bands})
    again = Baseline.load(Path(kept.save(tmp_path).parent))
    assert again == kept
    assert again is not None and again.tolerances_of("d0").pick("rnd-read", "iops") == (
        0.01,
        "--ssd-baseline-tolerance iops",
    )
    assert again.tolerances_of("d1").pick("rnd-read", "bw_mib_s") == (None, DERIVED)


def test_the_gate_takes_the_datasheet_and_refuses_a_bad_one_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    write_repeated(db, "run-a", "fw 1", {})
    write_repeated(db, "run-b", "fw 2", {"rnd-read": 0.5})
    gate = ["--db", str(db), "compare", "fw 1", "fw 2", "--gate", "-o", str(tmp_path / "c.html")]
    path = sheet(tmp_path, "[baseline.workload.rnd-read]\niops = 150\n")
    assert main([*gate, "--datasheet", str(path)]) == 1, "MiB/s still regressed"
    table = capsys.readouterr().out
    # the IOPS inside the sheet's band: counted as same (the table lists what is not)
    assert "fw 2 (d0), build 2 against 1: 1 regressed, 0 improved, 27 same, 0 unknown" in table
    assert "rnd-read read IOPS" not in table
    assert "· rnd-read read MiB/s: 0.50× the baseline" in table
    # the page the gate writes judges with the same bands as its table
    page = (tmp_path / "c.html").read_text()
    assert html.escape(f'{path} [baseline.workload."rnd-read"] iops') in page
    bad = sheet(tmp_path, "[baseline]\np99_us = -1\n")
    assert main([*gate, "--datasheet", str(bad)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"pytest-ssd: {bad}: baseline.p99_us: must be a positive number of percent, not -1\n"
    )
    assert main([*gate[:5], "--datasheet", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
