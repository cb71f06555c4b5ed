"""The top of the report: the run per suite, the warnings, and a link to every part."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_ssd.db import RunInfo
from pytest_ssd.figures import PALETTE
from pytest_ssd.report.sections import build
from pytest_ssd.report.sections.base import Palette
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
    summary, *sections = build(drives, 1, [run], tmp_path, tail=[("ssd-results", "Results")])

    assert summary.id == "ssd-summary" and summary.title == "Summary"
    body = summary.body
    passed = sum(outcome == "passed" for outcome in fast.tests.values())
    csd = re.search(r"<td>csd</td><td>(.*?)</td><td>(.*?)</td>", body)
    assert csd is not None
    assert csd.group(1) == f'{passed} passed, <b class="ssd-bad">1 failed</b>'
    assert csd.group(2) == "no datasheet line"
    esd = re.search(r"<td>esd</td><td>(.*?)</td><td>(.*?)</td>", body)
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
