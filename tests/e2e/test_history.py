"""``pytest-ssd history`` end to end: two real runs of one point on one loop device are one series.

The second run repeats the point (``--ssd-repeat=2``): its row pools both
repeats' fio latency histograms.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pytest_ssd.db import ResultsDb
from pytest_ssd.db.arrays import unpack
from pytest_ssd.db.history import find_series, history
from pytest_ssd.fio.results import pooled_percentiles
from tests.cli import run_cli


def _pairs(arrays: Any) -> list[tuple[int, int]]:
    return list(zip(arrays["ns"].tolist(), arrays["count"].tolist(), strict=True))


def test_two_runs_on_a_loop_device_are_one_series(
    run_ssd: Any, loop_device: Any, tmp_path: Path
) -> None:
    dev = loop_device(256)
    point = ("-k", "rnd-read", f"--dut={dev}", f"--ssd-confirm={dev}")
    first = run_ssd(*point)
    assert first.result.ret == 0, first.result.stdout.str()
    second = run_ssd(*point, "--ssd-repeat=2")
    assert second.result.ret == 0, second.result.stdout.str()
    db = first.report_dir / "results.sqlite"
    with ResultsDb(db) as reader:
        found = find_series(reader.conn, point="rnd-read")
        assert len(found) == 1, found
        one = found[0]
        assert one.runs == 2 and one.measurements == 3
        assert one.identity.profile == "quick" and one.identity.size_bytes == 256 * 2**20
        rows = history(reader.conn, one.key)
    assert [r.n for r in rows] == [1, 2] and {r.source for r in rows} == {"pooled bins"}
    # the repeated run's p99: over both repeats' histograms together, each kept as fio gave it
    with ResultsDb(db) as reader:
        blobs = reader.conn.execute(
            "SELECT arrays FROM series WHERE run_id = ? AND name = 'rnd-read.clat-read'",
            (second.run_dir.name,),
        ).fetchall()
        histograms = [_pairs(unpack(row["arrays"])) for row in blobs]
    assert len(histograms) == 2 and histograms[0] != histograms[1]
    assert rows[1].percentiles[99.0] == pooled_percentiles(histograms, [99.0])[99.0]

    graph = tmp_path / "history.svg"
    done = run_cli("history", f"--db={db}", "--point", "rnd-read", "-o", str(graph))
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if "pooled bins" in line]
    assert len(table) == 2 and all(run.run_dir.name in done.stdout for run in (first, second))
    # each latency in the unit that fits it: under four digits before the point, unit named
    cells = [re.findall(r"([\d,.]+) (µs|ms|s)\b", line) for line in table]
    assert all(len(row) == 3 for row in cells), table
    assert all(float(v.replace(",", "")) < 1000 for row in cells for v, _ in row), cells
    assert graph.read_text().lstrip().startswith("<?xml") and "<svg" in graph.read_text()
    refused = run_cli("history", f"--db={db}", "--point", "no-such-point")
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1
    assert json.loads((second.run_dir / "results.json").read_text())["schema"] == 1
