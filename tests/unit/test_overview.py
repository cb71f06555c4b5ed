"""The top of the report: the run per suite, the warnings, and a link to every part."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from pytest_ssd.cli.sections import declared_sections
from pytest_ssd.db import RunInfo
from pytest_ssd.figures import PALETTE
from pytest_ssd.report.sections import build
from pytest_ssd.report.sections.base import KeyFigure, Palette, ReportSection
from pytest_ssd.results.record import Derived
from tests.unit.test_sections_csd import load, slower


def _run(**environment: object) -> RunInfo:
    return RunInfo("run-a", "2026-11-25T00:00:00", None, False, {}, "", dict(environment), ())


def test_summary_counts_the_run_per_suite_and_links_every_section_and_graph(
    tmp_path: Path,
) -> None:
    fast = load()
    fill = next(test for test in fast.tests if "test_fill_drive[" in test)
    fast.tests[fill] = "failed"
    row = {"device": "d0", "line": "RND read", "conditions": {}, "spec": 1.0, "unit": "IOPS"}
    fast.verdicts = [
        {**row, "test": "esd/test_qd.py::t[x]", "verdict": "met", "measured": 2.0, "ratio": 2.0},
        {
            **row,
            "test": "esd/test_qd.py::t[y]",
            "verdict": "not met",
            "measured": 0.5,
            "ratio": 0.5,
        },
    ]
    drives = [fast, slower(load("slow drive", "run-b"))]
    run = _run(host_warnings=["ASLR (randomize_va_space) is 2, the method recommends 0"])
    summary, *sections = build(
        drives, 1, [run], tmp_path, declared_sections(), tail=[("ssd-results", "Results")]
    )

    assert summary.id == "ssd-summary" and summary.title == "Summary"
    body = summary.body
    counts = body[body.index("<th>tests</th>") :]  # the table after the key results
    passed = sum(outcome == "passed" for outcome in fast.tests.values())
    csd = re.search(r"<td>csd</td><td>(.*?)</td><td>(.*?)</td>", counts)
    assert csd is not None
    assert csd.group(1) == f'{passed} passed, <b class="ssd-bad">1 failed</b>'
    assert csd.group(2) == "no datasheet line"
    esd = re.search(r"<td>esd</td><td>(.*?)</td><td>(.*?)</td>", counts)
    assert esd is not None and esd.group(2) == '1 met, <b class="ssd-bad">1 not met</b>'
    # what a reader must know before any graph
    assert f"{fast.drive.label} is a scratch device: these results describe no SSD" in body
    assert "slow drive is a scratch" not in body  # compared, not this run's
    assert "ASLR (randomize_va_space) is 2" in body
    assert "the run did not finish" in body
    # every section and every figure is one click away, the tail too
    links = re.findall(r'href="#([^"]+)"', body)
    ids = [s.id for s in sections]
    assert [link for link in links if link in ids] == ids
    # the parts of a section too (its <h3>), each with an id the contents link
    parts = re.findall(r'<h3 id="([^"]+)">', "".join(s.body for s in sections))
    assert "ssd-suite-csd-1-quick-profiles-crystaldiskmark-like-best-pass" in parts
    assert set(parts) <= set(links)
    assert links[-1] == "ssd-results"
    figures = re.findall(
        r'<figure class="ssd-figure" id="([^"]+)"', "".join(s.body for s in sections)
    )
    assert len(figures) > 20 and set(figures) <= set(links)
    # the key results open the summary: this run's drive, its headline numbers, its verdicts
    assert body.startswith('<div id="ssd-key-results"')
    key = body[: body.index("<th>tests</th>")]
    assert f"<h3>{fast.drive.label}" in key and "slow drive" not in key
    rows = dict(re.findall(r"<td>([^<]*)</td><td><b>([^<]*)</b></td>", key))
    assert rows["SEQ read"] == "1,654 MiB/s" and rows["SEQ write"] == "5,510 MiB/s"
    assert rows["4K read QD1"] == "19,436 IOPS" and rows["4K write Q32T16"] == "139,529 IOPS"
    assert rows["4K read QD1 p99.9"] == "1.25 ms", "a latency in the unit the tables use"
    assert '1 met, <b class="ssd-bad">1 not met</b>' in key
    assert "<li>RND read: 0.5 of 1.0 IOPS (50.0%)</li>" in key, "the line not met, named"
    assert "ASLR (randomize_va_space) is 2" in key, "the warnings in the block"


def test_a_suites_own_headline_and_a_vendors_come_in_the_key_results(tmp_path: Path) -> None:
    fast = load()
    fast.derived.append(
        Derived(
            test="suites/wsat/test_wsat.py::test_wsat[scratch-rnd4k]",
            device=fast.drive.dut_id,
            name="wsat-rnd4k",
            values={"title": "WSAT RND 4 KiB", "steady_iops": 9876.4, "ended_by": "amount"},
        )
    )
    vendor = ReportSection(
        suite="csd",
        title="vendor csd",
        order=20,
        headline=lambda ctx, drive: [KeyFigure("endurance", "1.2 DWPD", "vendor rule")],
    )
    run = _run()
    summary, *_ = build(
        [fast],
        1,
        [run],
        tmp_path,
        [*(s for s in declared_sections() if s.suite not in ("smoke", "csd")), vendor],
    )
    key = summary.body[: summary.body.index("<th>tests</th>")]
    rows = dict(re.findall(r"<td>([^<]*)</td><td><b>([^<]*)</b></td>", key))
    assert rows["endurance"] == "1.2 DWPD" and "SEQ read" not in rows, "the suite's own"
    assert rows["WSAT RND 4 KiB: steady IOPS"] == "9,876 IOPS", "wsat's headline"
    assert key.index("endurance") < key.index("WSAT"), "in the suites' order"


def test_a_drive_keeps_its_colour_in_every_report_whatever_the_order() -> None:
    a, b, c = load("drive A"), load("drive B", "run-b"), load("drive C", "run-c")
    run_report, compare, other = Palette.of([a, b]), Palette.of([b, a]), Palette.of([c, a])
    assert run_report.colour("drive A") == compare.colour("drive A") == other.colour("drive A")
    assert run_report.colour("drive B") == compare.colour("drive B")
    # labels whose colours collide: the later one moves on, the report keeps them apart
    labels = [f"drive {n}" for n in range(12)]
    drives = [load(label, f"run-{n}") for n, label in enumerate(labels)]
    palette = Palette.of(drives[: len(PALETTE)])
    assert len({palette.colour(d.drive.label) for d in drives[: len(PALETTE)]}) == len(PALETTE)


def test_a_headline_that_raises_is_one_line_in_its_place(tmp_path: Path) -> None:
    def broken(ctx: object, drive: object) -> list[KeyFigure]:
        raise ValueError("no such counter")

    vendor = ReportSection(suite="csd", title="vendor csd", origin="plugin acme", headline=broken)
    summary, *sections = build([load()], 1, [_run()], tmp_path, [vendor])
    key = summary.body[: summary.body.index("<th>tests</th>")]
    assert (
        "report section &#x27;vendor csd&#x27; of plugin acme: headline() raised ValueError: "
        "no such counter" in key
    ), key
    assert any(s.id == "ssd-devices" for s in sections), "the report goes on"


def test_summary_counts_each_test_once_however_many_drives_ran_it(tmp_path: Path) -> None:
    # every drive of a run holds the run's whole test list (the tests table has no device)
    drives = [load("drive a", "run-a"), load("drive b", "run-a")]
    drives[1].drive = dataclasses.replace(drives[1].drive, dut_id="other")
    # no suite's own section: the summary alone is looked at, its graphs need not be drawn
    summary, *_ = build(drives, 2, [_run()], tmp_path, declared=())

    counts = summary.body[summary.body.index("<th>tests</th>") :]
    csd = re.search(r"<td>csd</td><td>(.*?)</td>", counts)
    assert csd is not None
    assert csd.group(1) == f"{len(drives[0].tests)} passed"
