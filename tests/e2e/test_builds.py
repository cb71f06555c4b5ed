"""Builds end to end: ``--ssd-build`` names what a run measured, history puts builds on its
x axis, and a low-QD point's repetitions are one series.

Real runs with real fio on loop devices. A loop device reports no firmware revision: a
run without ``--ssd-build`` measured an unknown build (results.json and the CSV say none,
junit leaves ``ssd.build`` out, history says "unknown build"), never one made up.
Device ids are not spelled out (they are the devices' own business).
"""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from pytest_ssd.db import ResultsDb
from pytest_ssd.db.history import find_series, history
from tests.cli import run_cli
from tests.e2e.conftest import REPO

CSD = REPO / "suites" / "csd"


def _junit(path: Path) -> tuple[list[dict[str, str]], dict[str, str]]:
    """Each testcase's properties, and the testsuite's."""
    root = ET.parse(path).getroot()
    cases = [
        {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        for case in root.iter("testcase")
    ]
    suite = next(root.iter("testsuite"))
    props = suite.find("properties")
    found = {} if props is None else {p.get("name", ""): p.get("value", "") for p in props}
    return cases, found


def _built(run: Any, junit: Path, ids: list[str]) -> list[Any]:
    """(results.json's builds, testcases' ssd.build, the testsuite's builds) of a run just
    made (its id added to *ids*: the report folder's ``latest`` is the newest run's)."""
    assert run.result.ret == 0, run.result.stdout.str()
    ids.append(run.run_dir.name)
    devices = run.results()["devices"]
    cases, suite = _junit(junit)
    return [
        [d["build"] for d in devices.values()],
        sorted({case.get("ssd.build") for case in cases}, key=str),
        [v for k, v in suite.items() if k.startswith("ssd.device.") and k.endswith(".build")],
    ]


def test_two_builds_are_two_points_of_history_and_a_loop_device_has_none(
    run_ssd: Any, loop_device: Any, tmp_path: Path
) -> None:
    dev = loop_device(256)
    point = ("-k", "rnd-read", f"--dut={dev}", f"--ssd-confirm={dev}")
    junit = [tmp_path / f"junit-{n}.xml" for n in range(3)]
    runs: list[str] = []
    first = run_ssd(*point, "--ssd-build=A", f"--junitxml={junit[0]}")
    assert _built(first, junit[0], runs) == [["A"], ["A"], ["A"]]
    assert "build A" in first.result.stdout.str(), "the header names the build"
    second = run_ssd(*point, "--ssd-build=B", "--ssd-repeat=2", f"--junitxml={junit[1]}")
    assert _built(second, junit[1], runs) == [["B"], ["B"], ["B"]]
    # no --ssd-build: the firmware, which a loop device does not report: none, not invented
    third = run_ssd(*point, f"--junitxml={junit[2]}")
    assert _built(third, junit[2], runs) == [[None], [None], []]
    assert "unknown build" in third.result.stdout.str()

    db = first.report_dir / "results.sqlite"
    done = run_cli("export", f"--db={db}", "--table=measurements")
    assert done.returncode == 0, done.stderr
    table = list(csv.DictReader(io.StringIO(done.stdout)))
    by_run = {row["run_id"]: row["build"] for row in table}
    assert by_run == dict(zip(runs, ["A", "B", ""], strict=True)), by_run

    with ResultsDb(db) as reader:
        (one,) = find_series(reader.conn, point="rnd-read")
        rows = history(reader.conn, *one.keys)
    assert [(r.build, r.n) for r in rows] == [("A", 1), ("B", 2), (None, 1)]
    graph = tmp_path / "history.svg"
    done = run_cli("history", f"--db={db}", "--point", "rnd-read", "-o", str(graph))
    assert done.returncode == 0, done.stderr
    drawn = graph.read_text()
    # builds on the x axis in the order first measured (matplotlib writes each text as a
    # comment beside its glyphs)
    ticks = [drawn.index(f"<!-- {name} -->") for name in ("A", "B", "unknown build")]
    assert ticks == sorted(ticks), "A, B, then the unknown build"
    kept = run_cli("history", f"--db={db}", "--point", "rnd-read", "--build", "B")
    assert kept.returncode == 0, kept.stderr
    assert runs[1] in kept.stdout and runs[0] not in kept.stdout and runs[2] not in kept.stdout


def test_builds_are_given_once_or_once_per_device(run_ssd: Any, tmp_path: Path) -> None:
    """(A resume with another --ssd-build is refused: tests/e2e/test_resume_same_run.py.)"""
    done = run_ssd("--dut=scratch:64M", "--ssd-build=A", "--ssd-build=B", "-k", "rnd-read")
    said = done.result.stderr.str()
    assert done.result.ret == 4 and "Traceback" not in said, said
    assert "--ssd-build given 2 times for 1 devices: give it once (every device) or once" in said
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


def test_a_low_qd_points_repetitions_are_one_series(
    run_ssd: Any, loop_device: Any, tmp_path: Path
) -> None:
    dev = loop_device(1024)
    point = "rnd and cssd1 and qd1 and r70"
    run = run_ssd("-k", point, f"--dut={dev}", f"--ssd-confirm={dev}", suite=CSD, timeout=900)
    assert run.result.ret == 0, run.result.stdout.str()
    names = sorted(m["name"] for m in run.results()["measurements"] if "low_qd" in m["test"])
    assert names == ["rnd-q1-r070-n0", "rnd-q1-r070-n1", "rnd-q1-r070-n2"]
    db = run.report_dir / "results.sqlite"
    with ResultsDb(db) as reader:
        found = find_series(reader.conn, point="r070")
        assert len(found) == 1, [s.identity.point for s in found]
        (one,) = found
        assert one.identity.point.endswith("qd1-r70] rnd-q1-r070"), one.identity.point
        rows = history(reader.conn, *one.keys)
    # one row per direction (70 % reads), each the point's three repetitions
    assert sorted(r.direction for r in rows) == ["read", "write"]
    assert all(r.n == 3 and len(r.iops_each) == 3 for r in rows), rows
    assert all(r.source == "pooled bins" for r in rows), "the repetitions' histograms pooled"
    done = run_cli("history", f"--db={db}", "--point", "r070")
    assert done.returncode == 0, done.stderr
    assert f"series {one.key}" in done.stdout
