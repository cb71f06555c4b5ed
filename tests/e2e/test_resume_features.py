"""--ssd-resume with --ssd-repeat, datasheet lines and a baseline, end to end.

suites/esd (quick, the SEQ sweep's read points) and the datasheet suite run on a
1 GiB loop device with ``--ssd-repeat=2`` and a datasheet of four lines checked in
the sweep's points (two met, two not, two in points a cut run finishes, two in
points it leaves): once uninterrupted as ``build 1``, then as ``build 2`` against
it (``--ssd-baseline``), killed mid-sweep and resumed.  The resumed run must hold
every point once with its repeats, judge each line as the uninterrupted run did,
and carry a baseline verdict for every point, kept or new, in its one results.json,
junit file and database.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import shared_test_id
from tests.e2e.conftest import REPO
from tests.e2e.test_resume import _argv, _rows, _stopped, exited

STATE = "ss(seq-128k-write-qd256)"
#: (line, block size, MB/s): kept in the cut run (2 KiB, 4 KiB) or run after it (512 KiB, 1 MiB)
LINES = (
    ("kept-not-met", "2KiB", 10**5),
    ("kept-met", "4KiB", 1),
    ("new-not-met", "512KiB", 10**5),
    ("new-met", "1MiB", 1),
)
LINE = """
[[specs]]
id = "{id}"
metric = "throughput"
unit = "MB/s"
pattern = "seq"
direction = "read"
block_size = "{block_size}"
qd = 32
state = "{state}"
value = {value}
kind = "ceiling"
"""
REPEAT = 2
#: the SEQ sweep's points recorded when the run is killed (512 B ... 4 KiB: two lines kept)
CUT_AFTER = 4
SWEEP = "SELECT count(*) FROM tests WHERE nodeid LIKE '%by_block_size%'"


def _suite(sheet: Path) -> tuple[str, ...]:
    return (
        str(REPO / "suites" / "esd"),
        str(REPO / "suites" / "datasheet"),
        "-k",
        "seq_preconditioning or seq_by_block_size and read or spec_line",
        "--dut-class=essd-ri",
        f"--datasheet={sheet}",
        "--datasheet-force",
        f"--ssd-repeat={REPEAT}",
    )


def _sheet(folder: Path) -> Path:
    path = folder / "sheet.toml"
    head = '[drive]\nname = "loop"\nmodel = ["*"]\ncapacity_gb = 1\n'
    body = "".join(
        LINE.format(id=line, block_size=size, state=STATE, value=value)
        for line, size, value in LINES
    )
    path.write_text(head + body)
    return path


@dataclass
class Run:
    """What one run left: its results.json, junit file and database rows."""

    run_id: str
    dut: str
    output: str
    results: dict[str, Any]
    junit: list[ET.Element]
    #: outcome by test, as the database holds it (one row per test)
    outcomes: dict[str, str]
    #: measurements by test in the database (each repeat is one)
    measurements: Counter[str]

    def json_measurements(self) -> Counter[str]:
        return Counter(shared_test_id(m["test"], self.dut) for m in self.results["measurements"])

    def derived(self, name: str) -> Counter[str]:
        """Tests by how many derived records named *name* (or ``*.name``) results.json has."""
        return Counter(
            shared_test_id(d["test"], self.dut)
            for d in self.results["derived"]
            if d["name"] == name or d["name"].endswith(f".{name}")
        )

    def conformance(self) -> dict[str, str]:
        return {row["id"]: row["verdict"] for row in self.results["conformance"]}


def _run(dev: Path, reports: Path, *args: str, sheet: Path) -> Run:
    junit = reports / f"junit-{len(list(reports.glob('junit-*')))}.xml"
    argv = _argv(dev, reports, f"--junitxml={junit}", *args, suite=_suite(sheet))
    # two lines are not met: their points fail, nothing else does
    done = exited(argv, pytest.ExitCode.TESTS_FAILED)
    results = json.loads((reports / "latest" / "results.json").read_text())
    run_id, dut = results["run"]["id"], dev.name
    rows = _query(reports, "SELECT nodeid, outcome FROM tests WHERE run_id = ?", run_id)
    outcomes = {shared_test_id(nodeid, dut): outcome for nodeid, outcome in rows}
    assert len(outcomes) == len(rows), rows  # one row per test
    tests = _query(reports, "SELECT test FROM measurements WHERE run_id = ?", run_id)
    measured = Counter(shared_test_id(row[0], dut) for row in tests)
    cases = list(ET.parse(junit).iter("testcase"))
    return Run(run_id, dut, done.stdout + done.stderr, results, cases, outcomes, measured)


def _query(reports: Path, sql: str, run_id: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(reports / "results.sqlite")) as conn:
        return conn.execute(sql, (run_id,)).fetchall()


def _failures(reports: Path) -> str:
    sql = "SELECT run_id, nodeid, message FROM tests WHERE outcome != ? AND outcome != 'passed'"
    return "\n".join(" ".join(map(str, row)) for row in _query(reports, sql, "skipped"))


def _latest(reports: Path) -> str:
    with contextlib.closing(sqlite3.connect(reports / "results.sqlite")) as conn:
        return str(conn.execute("SELECT id FROM runs ORDER BY start DESC").fetchone()[0])


def _case_ids(run: Run) -> Counter[str]:
    return Counter(f"{case.get('classname')}::{case.get('name')}" for case in run.junit)


def _baseline_properties(case: ET.Element) -> list[str]:
    return [p.get("name", "") for p in case.iter("property") if ".baseline" in p.get("name", "")]


def test_a_resumed_run_keeps_repeats_datasheet_lines_and_baseline_verdicts(
    loop_device: Any, tmp_path: Path
) -> None:
    dev: Path = loop_device(1024)
    sheet = _sheet(tmp_path)
    reports = tmp_path / "reports"
    reference = _run(dev, reports, "--dut-label=build 1", sheet=sheet)
    points = [t for t in reference.outcomes if "by_block_size" in t]
    assert len(points) == 12, reference.outcomes
    assert {reference.measurements[t] for t in points} == {REPEAT}, reference.measurements
    assert reference.conformance() == {
        "kept-not-met": "not met",
        "kept-met": "met",
        "new-not-met": "not met",
        "new-met": "met",
    }
    build2 = ("--dut-label=build 2", "--ssd-baseline=build 1")
    _stopped(
        dev,
        reports,
        lambda log: _rows(reports, SWEEP) >= len(points) + CUT_AFTER,  # build 1's and 4 more
        signal.SIGKILL,
        *build2,
        suite=_suite(sheet),
    )
    cut = _latest(reports)
    finished = _query(reports, "SELECT nodeid FROM tests WHERE run_id = ?", cut)
    kept = {shared_test_id(row[0], dev.name) for row in finished} & set(points)
    assert len(kept) >= CUT_AFTER and len(kept) < len(points) - 2, kept
    measured = "SELECT id, test FROM measurements WHERE run_id = ?"
    before = [row for row in _query(reports, measured, cut) if row[1] in kept]

    resumed = _run(dev, reports, *build2, "--ssd-resume=last", sheet=sheet)
    assert f"resuming run {cut}: " in resumed.output, resumed.output
    assert resumed.run_id == cut
    # the kept points were not measured again: their rows are the cut run's
    assert [row for row in _query(reports, measured, cut) if row[1] in kept] == before
    # every test once with the uninterrupted run's outcome; every point with its repeats
    assert resumed.outcomes == reference.outcomes, _failures(reports)
    assert resumed.measurements == reference.measurements
    assert resumed.json_measurements() == reference.measurements
    assert resumed.derived("repeat") == reference.derived("repeat")
    assert {resumed.derived("repeat")[t] for t in points} == {1}
    # each datasheet line judged as uninterrupted, the kept points' lines included
    assert resumed.conformance() == reference.conformance()
    # a baseline verdict for each point, kept or new, once
    assert {t: resumed.derived("baseline")[t] for t in points} == dict.fromkeys(points, 1)
    # junit: each test once, each point with its baseline properties
    assert set(_case_ids(resumed).values()) == {1}
    assert len(resumed.junit) == len(reference.junit)
    bare = [
        case.get("name")
        for case in resumed.junit
        if "by_block_size" in (case.get("name") or "") and not _baseline_properties(case)
    ]
    assert bare == [], bare
