"""suites/esd end to end on a 2 GiB scratch device (quick profile): the whole enterprise flow."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from tests.e2e.browsing import reads_in_a_window
from tests.e2e.conftest import REPO, SMOKE, attached_loops
from tests.e2e.latencies import SCALED, table_after, unscaled

ESD = REPO / "suites" / "esd"
SECTION_FIGURES = (
    "esd precondition seq",
    "esd precondition seq zoom",
    "esd seq-read-bs",
    "esd seq-write-bs",
    "esd seq-read-qd",
    "esd seq-write-qd",
    "esd precondition rnd",
    "esd precondition rnd zoom",
    "esd rnd-read-bs",
    "esd rnd-write-bs",
    "esd rnd-read-qd",
    "esd rnd-write-qd",
    "esd rnd-70r-qd",
    "esd qos-read",
    "esd qos-write",
    "esd qos-70r",
)


def test_esd_quick_walks_the_flow_and_reports_every_graph(
    run_ssd: Any, chromium: str, artifacts: Path
) -> None:
    run = run_ssd("--dut=scratch:2G", suite=ESD, timeout=900)
    # one test per point: SEQ 24 by block size + 18 by QD, RND 24 + 29 (read, write, 70 % by
    # QD, 4 workers x QD32), both preconditionings and the QoS test
    run.result.assert_outcomes(passed=98)
    data = run.results()
    order = [m["name"] for m in data["measurements"]]
    # SEQ preconditioning, SEQ measurements, RND preconditioning, RND measurements, QoS
    assert order.index("wdpc-seq") < order.index("seq-read-bs512B") < order.index("wipc-rnd")
    assert order.index("wdpc-rnd") < order.index("rnd-read-qd1") < order.index("qos-read")
    assert not data["transitions"], "the tests themselves precondition a new scratch device"
    assert {m["workload"]["ioengine"] for m in data["measurements"]} == {"io_uring"}
    points = [d["values"] for d in data["derived"] if d["name"] == "esd-point"]
    derived = {d["name"]: d["values"] for d in data["derived"] if d["name"] != "esd-point"}
    assert Counter(d["name"] for d in data["derived"]) == {
        **dict.fromkeys(derived, 1),
        "esd-point": 95,
    }
    for pattern in ("seq", "rnd"):
        pre = derived[f"precondition-{pattern}"]
        assert pre["wipc_bytes"] == 2 * pre["span_bytes"] and pre["wdpc_bytes"] > 0
        assert pre["wdpc_bytes"] <= 23 * pre["span_bytes"]
    sweeps = Counter(p["sweep"] for p in points)
    assert (
        sweeps["seq-read-bs"] == 12 and sweeps["rnd-write-qd"] == 10 and sweeps["rnd-70r-qd"] == 9
    )
    assert all(p["value"] > 0 and p["x"] == p["xs"][p["index"]] for p in points)
    assert set(derived["qos"]) == {"qos-read", "qos-write", "qos-70r", "skipped"}
    html = (run.run_dir / "report.html").read_text()
    section = html[html.index('id="ssd-suite-esd"') :]
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", section.split("</section>")[0])
    assert captions == list(SECTION_FIGURES)
    assert_qos_latencies_scaled(section)
    assert "a scratch device (every suite applies)" in html, "the class in the devices table"
    assert str(run.report_dir) not in attached_loops()
    reads_in_a_window(run.run_dir / "report.html", "ssd-suite-esd", artifacts)


def assert_qos_latencies_scaled(section: str) -> None:
    """The QoS table: typical, p99 and p99.99 columns, every latency cell in its unit."""
    header, rows = table_after(section, "QoS at QD1</h3>")
    assert header[-3:] == ["typical (mean) latency", "p99 latency", "p99.99 latency"], header
    assert not [h for h in header if "µs" in h], "no column in unscaled µs"
    assert len(rows) == 3, rows
    for cells in rows:
        assert unscaled(cells[-3:]) == [], cells
        assert SCALED.fullmatch(cells[-3]), "the mean is always resolved"


def test_bad_dut_class_is_one_line(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:1G", "--dut-class=enterprise", suite=SMOKE)
    assert run.result.ret != 0
    run.result.stderr.fnmatch_lines(["*--dut-class=enterprise: use one of cssd, essd-ri*"])
    assert "Traceback" not in run.result.stderr.str()
