"""The two-device comparison (seed 004): ratios per workload, Spearman's rho, verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.cli.sections import declared_sections
from pytest_ssd.db import ResultsDb
from pytest_ssd.report.build import gather
from pytest_ssd.report.sections import build
from pytest_ssd.report.sections.pair import _latency_panel, printed, spearman, verdict
from tests.unit.db_fixtures import write_run


def test_spearman_ranks_with_ties() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [1, 3, 3, 2]) == pytest.approx(1 / 3)  # mid-ranks for ties
    assert spearman([1, 2], [1, 2]) is None and spearman([1, 1, 1], [1, 2, 3]) is None
    assert spearman([1, 2, float("nan"), 3], [1, 2, 5, 3]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("rho", "text"),
    [
        (0.9, "trends agree"),
        (0.80, "trends agree"),
        (0.7999999999999999, "trends agree"),  # spearman()'s 0.8, printed 0.80
        (0.7949, "trends partly agree"),  # printed 0.79
        (0.5, "trends partly agree"),
        (0.40, "trends partly agree"),
        (0.39999999999999997, "trends partly agree"),  # printed 0.40
        (0.3949, "trends differ"),  # printed 0.39
        (-0.2, "trends differ"),
        (None, "cannot be ranked (fewer than 3 workloads, or one drive does not vary)"),
    ],
)
def test_verdicts(rho: float | None, text: str) -> None:
    assert verdict(rho) == text


@pytest.mark.parametrize(
    ("ranks", "text"),
    [([2, 1, 4, 3, 5], "0.80 trends agree"), ([1, 3, 4, 5, 2], "0.40 trends partly agree")],
)
def test_rho_at_a_threshold_is_judged_as_printed(ranks: list[int], text: str) -> None:
    rho = spearman([1, 2, 3, 4, 5], ranks)
    assert rho is not None and rho < float(text[:4])  # 0.7999999999999999, 0.39999999999999997
    assert f"{printed(rho)} {verdict(rho)}" == text


def test_two_labels_get_ratios_and_agreeing_trends(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-a", "real SSD")
    write_run(path, "run-b", "emulator", scale=0.5)
    with ResultsDb(path) as db:
        drives, runs = gather(db, db.run("run-a").drives, db.resolve(["emulator"]))
    sections = {s.id: s for s in build(drives, 1, runs, tmp_path / "figures", declared_sections())}
    body = sections["ssd-pair"].body
    assert sections["ssd-pair"].title == "Two-device comparison: real SSD and emulator"
    rows = body.split("<tr>")[2:6]
    assert len(rows) == 4 and all("<td>0.50</td>" in row for row in rows)  # IOPS, MB/s halved
    assert "<td>IOPS</td><td>1.00</td><td>trends agree</td>" in body
    assert "<td>p50 latency</td><td>—</td><td>cannot be ranked" in body  # same p50 everywhere
    # p50 and p99 in their unit (was '100.0' under 'p50 (µs)'), their ratio a plain number
    assert all("<td>100.0 µs</td><td>100.0 µs</td><td>1.00</td>" in row for row in rows)
    assert all("<td>300.0 µs</td><td>300.0 µs</td><td>1.00</td>" in row for row in rows)
    assert "(µs)" not in body.split("<img")[0]
    assert body.count("<img") == 1
    assert len(list((tmp_path / "figures").glob("*.svg"))) >= 2


def test_one_or_three_labels_have_no_pair_section(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    for run, label in (("r1", "A"), ("r2", "B"), ("r3", "C")):
        write_run(path, run, label)
    with ResultsDb(path) as db:
        alone = gather(db, db.run("r1").drives, [])
        three = gather(db, db.run("r1").drives, db.resolve(["B", "C"]))
    for (drives, runs), current in ((alone, 1), (three, 1)):
        assert "ssd-pair" not in {
            s.id for s in build(drives, current, runs, tmp_path / "f", declared_sections())
        }


def test_one_drive_against_its_own_earlier_run_gets_two_names(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    write_run(path, "run-1", "drive A")
    write_run(path, "run-2", "drive A", scale=2.0)
    with ResultsDb(path) as db:
        drives, runs = gather(db, db.run("run-2").drives, db.resolve(["run-1"]))
    sections = {s.id: s for s in build(drives, 1, runs, tmp_path / "figures", declared_sections())}
    assert [d.drive.label for d in drives] == ["drive A (run run-2)", "drive A (run run-1)"]
    assert (
        sections["ssd-pair"].title
    ) == "Two-device comparison: drive A (run run-2) and drive A (run run-1)"


def test_a_latency_panel_is_in_the_unit_of_its_highest_bar() -> None:
    bars = {"RND 4K": {"a": (2_164_260.86, 120_000.0), "b": (float("nan"), 0.0)}}
    title, scaled = _latency_panel("p99 latency", bars)
    assert title == "p99 latency (s)"
    assert scaled["RND 4K"]["a"] == pytest.approx((2.16426086, 0.12))
