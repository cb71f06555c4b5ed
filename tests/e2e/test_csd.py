"""suites/csd end to end on a small scratch device (quick profile): the whole consumer flow."""

from __future__ import annotations

from collections import Counter

from tests.e2e.conftest import SsdRun, attached_loops

FIGURES = (
    "fill bandwidth vs written",
    "fill bandwidth vs time",
    "fill latency vs time",
    "fill mean bandwidth",
    "fill speed profile",
    "fill speed histogram",
    "read speed profile",
    "read speed histogram",
    "latency cssd-1",
    "tail latency cssd-2",
    "csd quick profiles fob",
    "csd quick profiles used75",
    "sync writes cssd-1",
    "csd low QD weighted cssd-2-seq",
    "csd low QD ranking cssd-1-rnd",
)


def test_csd_quick_walks_the_method_and_reports_every_part(csd_quick: SsdRun) -> None:
    run = csd_quick  # suites/csd --dut=scratch:1G, quick (tests/e2e/test_junit.py reads it too)
    # a test per point: 16 quick-profile lines in each of 4 states, 36 low-QD points
    # (2 patterns x 2 rounds x QD 1, 2, 4 x 0, 70, 100 % read), 2 fill, 2 sync, 2 latency
    data = run.results()
    # dd against fio in the speed profile: on a busy host "not judged: noise", a skip
    speed = next(d["values"] for d in data["derived"] if d["name"] == "speed-read")
    noisy = speed["cross_check"] == "not judged: noise"
    assert speed["cross_check"] in ("agrees", "not judged: noise"), speed["cross_check_samples"]
    run.result.assert_outcomes(passed=106 - noisy, skipped=int(noisy))
    flow = [(t["source"], t["target"]) for t in data["transitions"]]
    # purge -> FOB profiles -> cssd -> measure -> purge -> fill -> RND + trim -> measure again
    assert flow == [("fob", "cssd"), ("cssd", "fob"), ("filled", "cssd"), ("cssd", "used75")]
    assert [s["kind"] for s in data["transitions"][2]["steps"] if s["kind"] != "idle"] == [
        "fio",
        "discard",
    ], "after the fill drive, cssd needs only the RND and trim steps"
    derived = Counter(d["name"] for d in data["derived"])
    assert derived == {
        "cdm-line": 64,
        "tail-latency": 2,
        "lowqd-point": 36,
        "sync-writes": 2,
        "fill": 1,
        "fill-speed": 1,
        "speed-read": 1,
    }
    # the low-QD points of each round started together in one batch (and nothing else did)
    batches = sorted(p.name for p in (run.run_dir / "artifacts").glob("batch-*"))
    assert [name.split("test_low_qd_")[1] for name in batches] == [
        "scratch-seq-cssd1-qd1-r0_",
        "scratch-seq-cssd2-qd1-r0_",
    ]
    assert "fio batch failed" not in run.result.stdout.str()
    fill = next(d["values"] for d in data["derived"] if d["name"] == "fill")
    assert "cache" in str(fill) and "mean" in str(fill)
    html = (run.run_dir / "report.html").read_text()
    missing = [title for title in FIGURES if title not in html]
    assert not missing, missing
    assert str(run.report_dir) not in attached_loops()
