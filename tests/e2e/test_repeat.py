"""--ssd-repeat end to end: seed 004's cycle on a scratch device, mean ± sd in the report."""

from __future__ import annotations

from typing import Any


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
