"""--ssd-repeat end to end: seed 004's cycle on a scratch device, mean ± sd in the report."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_ssd.fio.results import pooled_percentiles
from pytest_ssd.text import latency


def test_repeated_corners_record_every_run_and_their_spread(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:512M", "--ssd-repeat=2", "-k", "seq-write or rnd-read")
    assert run.result.ret == 0, run.result.stdout.str()
    data = run.results()
    names = sorted((m["name"], m["workload"]["repeat"]) for m in data["measurements"])
    assert names == [("rnd-read", 1), ("rnd-read", 2), ("seq-write", 1), ("seq-write", 2)]
    spreads = {d["name"]: d["values"] for d in data["derived"]}
    write = spreads["seq-write.repeat"]["write"]["iops"]
    runs = [m["metrics"]["write"]["iops"] for m in data["measurements"] if m["name"] == "seq-write"]
    assert write["n"] == 2 and write["values"] == runs
    assert write["mean"] == sum(runs) / 2 and write["min"] == min(runs)
    # a write run is preceded by a TRIM of its span (seed 004), a read run is not
    artifacts = run.run_dir / "artifacts"
    trims = sorted(p.parent.name for p in artifacts.glob("*/trim"))
    assert len(trims) == 1 and "seq-write" in trims[0]
    page = (run.run_dir / "report.html").read_text()
    suite = page[page.index('id="ssd-suite-smoke"') :]
    assert f"{write['mean']:,.0f} ± {write['sd']:,.0f}" in suite
    assert "<td>2, CV " in suite


def test_repeated_percentiles_are_the_pooled_histograms_in_the_report(run_ssd: Any) -> None:
    """A repeated read's p99 is the p99 of both runs' I/Os (their fio histograms pooled),
    in the derived spread and in the report's table, not the mean of the runs' p99s."""
    run = run_ssd("--dut=scratch:256M", "--ssd-repeat=2", "-k", "rnd-read")
    assert run.result.ret == 0, run.result.stdout.str()
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    histograms = []
    for npz in sorted(run.run_dir.glob("artifacts/**/rnd-read.clat-read.repeat*.npz")):
        with np.load(npz) as arrays:
            histograms.append(
                list(zip(arrays["ns"].tolist(), arrays["count"].tolist(), strict=True))
            )
    assert len(histograms) == 2 and histograms[0] != histograms[1]
    expected = pooled_percentiles(histograms, [99.0])[99.0]
    assert expected is not None
    spread = {d["name"]: d["values"] for d in run.results()["derived"]}["rnd-read.repeat"]
    p99 = spread["read"]["p99_us"]
    assert p99["pooled"] == expected and p99["n"] == 2
    page = (run.run_dir / "report.html").read_text()
    suite = page[page.index('id="ssd-suite-smoke"') :]
    assert latency(expected, p99["sd"]) in suite
