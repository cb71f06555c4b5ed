"""What a SNIA round keeps of a cell, and the window's per-cell results, on golden fio output.

``randrw_70_30_qd1.json`` is a RND 4 KiB 70/30 job at QD1 (fio 3.33, json+):
21,835 reads and 9,342 writes.  A mixed cell is reported over all its I/Os.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from pytest_ssd.fio.results import parse_output, percentiles_from_bins
from pytest_ssd.methods.snia.figures import CellTable
from pytest_ssd.methods.snia.report import STEADY_HEADER, cell_table, steady_row
from pytest_ssd.methods.snia.run import CellStats, Rounds, window_results
from pytest_ssd.methods.snia.workloads import plan
from pytest_ssd.state.profile import Profile
from pytest_ssd.steady.snia import evaluate

GOLDEN = Path(__file__).parents[1] / "golden" / "fio"
RESULT = parse_output((GOLDEN / "randrw_70_30_qd1.json").read_text()).job("randrw")
READ, WRITE = RESULT.directions["read"], RESULT.directions["write"]


def test_a_mixed_cell_is_all_its_ios() -> None:
    cell = CellStats.of(RESULT)
    assert cell.ios == 21_835 + 9_342
    assert cell.iops == pytest.approx(21_813.186813 + 9_332.667333)
    assert cell.bw_mib_s == pytest.approx(READ.bw_mib_s + WRITE.bw_mib_s)
    # the mean over every I/O: 21835 reads of 19,950.4 ns and 9342 writes of 24,359.9 ns
    expected = (21_835 * 19_950.427021 + 9_342 * 24_359.943909) / 31_177 / 1000
    assert cell.clat_mean_us == pytest.approx(expected)
    assert cell.clat_max_us == 257.964, "the slower direction's maximum"
    assert sum(count for _, count in cell.bins) == cell.ios


def test_a_cell_without_clat_data_is_not_measured_never_zero() -> None:
    bare = {k: dataclasses.replace(d, clat=None) for k, d in RESULT.directions.items()}
    cell = CellStats.of(dataclasses.replace(RESULT, directions=bare))
    assert (cell.clat_mean_us, cell.clat_max_us, cell.bins) == (None, None, ())
    assert math.isnan(cell.value("clat_mean_us")) and cell.value("iops") == cell.iops
    (result,) = window_results([[cell]] * 5)
    assert (result["clat_mean_us"], result["clat_max_us"], result["clat_p99999_us"]) == (
        None,
        None,
        None,
    )


def test_window_results_merge_the_rounds() -> None:
    cell = CellStats.of(RESULT)
    slower = CellStats(
        cell.iops * 0.8,
        cell.bw_mib_s * 0.8,
        cell.ios,
        cell.clat_mean_us * 2,
        cell.clat_max_us * 3,
        cell.bins,
    )
    one, five = window_results([[cell]]), window_results([[cell]] * 4 + [[slower]])
    (result,) = five
    assert result["iops"] == pytest.approx(cell.iops * 4.8 / 5), "mean of the rounds"
    assert result["clat_mean_us"] == pytest.approx(cell.clat_mean_us * 6 / 5), "mean of the I/Os"
    assert result["clat_max_us"] == cell.clat_max_us * 3 and result["ios"] == 5 * cell.ios
    # 31,177 I/Os cannot resolve p99.999 (needs 100,000); five rounds' 155,885 can
    assert one[0]["clat_p99999_us"] is None
    tail = percentiles_from_bins(list(cell.bins) * 5, [99.999])[0]
    assert tail.resolved and result["clat_p99999_us"] == tail.ns / 1000


def test_rounds_keep_histograms_only_inside_the_window() -> None:
    snia_plan = plan(Profile("quick"))
    test = snia_plan.tests()["throughput-1MiB"]
    rounds = Rounds(test, snia_plan)
    cell = CellStats.of(RESULT)
    factors = (1, 2, 3, 4, 5, 5)
    growing = [dataclasses.replace(cell, bw_mib_s=cell.bw_mib_s * n) for n in factors]
    verdicts = [rounds.add([cell, c]) for c in growing[:5]]
    assert verdicts[:4] == [None] * 4 and verdicts[4] is not None
    assert not rounds.tracker.done, "the write's MiB/s still climb"
    rounds.add([cell, growing[5]])
    assert rounds.verdict.exhausted, "quick: 6 rounds at most"
    assert rounds.cells[0][0].bins == () and rounds.cells[1][0].bins == cell.bins
    assert rounds.array("bw_mib_s")[:, 1] == pytest.approx([cell.bw_mib_s * n for n in factors])
    # the window is rounds 2-6: 2, 3, 4, 5, 5 times the cell's MiB/s
    assert rounds.window()[1]["bw_mib_s"] == pytest.approx(cell.bw_mib_s * 19 / 5)


def test_cell_table_places_cells_and_marks_unresolved() -> None:
    meta = {"mixes": [100, 0], "block_sizes": [4096, 512]}
    cells = [
        {"read_pct": 0, "block_size": 512, "x": 7.0},
        {"read_pct": 100, "block_size": 4096, "x": None},
    ]
    table = CellTable.of(meta, cells, "x")
    assert np.isnan(table.values[0, 0]) and table.values[1, 1] == 7.0
    assert np.isnan(table.values[0, 1]) and np.isnan(table.values[1, 0])


def test_the_tail_never_reads_above_the_maximum_fio_measured() -> None:
    # the slowest bin's value is its middle: it may lie above the exact maximum (seen in CI:
    # p99.999 20,054.016 µs from the bins against a 20,043.423 µs maximum)
    cell = CellStats.of(RESULT)
    tail = percentiles_from_bins(list(cell.bins) * 5, [99.999])[0]
    below = tail.ns / 1000 * 0.999
    capped = dataclasses.replace(cell, clat_max_us=below)
    (result,) = window_results([[capped]] * 5)
    assert result["clat_p99999_us"] == below == result["clat_max_us"]
    (result,) = window_results([[cell]] * 5)
    assert result["clat_p99999_us"] == tail.ns / 1000 < result["clat_max_us"]


def test_a_latency_cell_table_writes_each_latency_in_its_unit() -> None:
    meta = {"mixes": [100, 0], "block_sizes": [4096, 512]}
    cells = [
        {"read_pct": 100, "block_size": 4096, "clat_mean_us": 2_164_260.86},
        {"read_pct": 100, "block_size": 512, "clat_mean_us": 716.84},
        {"read_pct": 0, "block_size": 4096, "clat_mean_us": 2211.84},
    ]
    html = cell_table(CellTable.of(meta, cells, "clat_mean_us"))
    # was '2,164,261' and '716.8' under '(µs)'
    assert "<td>2.16 s</td><td>716.8 µs</td>" in html and "<td>2.21 ms</td><td>n/r</td>" in html
    assert "R/W mix \\ mean completion latency (clat)</th>" in html
    iops = cell_table(CellTable.of(meta, [{**cells[0], "iops": 19_520.4}], "iops"))
    assert "R/W mix \\ IOPS (IOPS)</th>" in iops and "<td>19,520</td>" in iops


def test_a_latency_steady_state_row_is_in_the_unit_of_its_mean() -> None:
    verdict = evaluate([2_164_260.86 * f for f in (1.3, 1.1, 1.0, 1.02, 0.99)])
    row = dict(zip(STEADY_HEADER, steady_row("scratch", verdict, "µs"), strict=True))
    assert row["window values"] == "2.81 s, 2.38 s, 2.16 s, 2.21 s, 2.14 s"
    assert row["mean"] == "2.34 s" and row["fitted slope"] == "-0.1515 s/round"
    iops = dict(
        zip(STEADY_HEADER, steady_row("scratch", evaluate([9000.0] * 5), "IOPS"), strict=True)
    )
    assert iops["mean"] == "9,000" and iops["fitted slope"] == "+0 IOPS/round"
