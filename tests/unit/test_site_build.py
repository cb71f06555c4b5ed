"""``pytest-ssd site``: the lab's static site from the database, on both backends.

Runs written through the real writer (two drives, six builds, five repeats each; one
drive's fifth build at a third of its IOPS), the site built by the command line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import main
from pytest_ssd.db import RunWriter, TestDone, TestRecords
from pytest_ssd.results.record import Measurement
from tests.unit.db_fixtures import CORNERS, corner, description

BUILDS = ("b1", "b2", "b3", "b4", "b5", "b6")
#: five repeats' IOPS around 10,000 (within 2 %)
REPEATS = (10_000.0, 10_150.0, 9_900.0, 10_080.0, 9_950.0)


def _drive(serial: str, build: str) -> dict[str, Any]:
    found = description("d0", f"drive {serial}", serial)
    found["identity"] = {**found["identity"], "firmware": "1.0", "size_bytes": 2**31}
    return {**found, "build": build}


def record(
    target: Path | str, serial: str, number: int, slow: float = 1.0, kiops: float | None = None
) -> None:
    """One run of drive *serial* on build number *number*: five repeats of seq-read, checked
    against a datasheet's *kiops* when given."""
    run_id = f"run-{serial}-{number}"
    start = f"2026-11-{number + 1:02d}T10:00:0{int(serial[-1])}"
    writer = RunWriter(target, run_id, Path("/nonexistent") / run_id, {"cpu": "Xeon"}, start)
    drive = _drive(serial, BUILDS[number - 1])
    writer.add_device("d0", drive, drive["label"])
    measured = []
    for repeat, iops in enumerate(REPEATS, start=1):
        m = corner("d0", CORNERS[0], iops * slow * (1 + 0.001 * number))
        workload = {**m.workload, "repeat": repeat, "state": "sustained", "profile": "quick"}
        measured.append(Measurement(**{**m.as_dict(), "workload": workload}))
    test = measured[0].test
    checked = {"device": "d0", "test": test, "id": "seq-read", "verdict": "pass", "per_tb": False}
    lines = [{**checked, "metric": "iops", "spec": kiops, "unit": "kIOPS"}] if kiops else []
    done = TestDone(test, "passed", 1.0, None, "smoke")
    writer.add(TestRecords(test, measured, verdicts=lines, done=done))
    writer.finish({"passed": 1}, complete=True)


@pytest.fixture
def lab(db_target: Path | str) -> Path | str:
    """Drives S1 and S2 over builds b1 .. b5; S1's b5 at a third of its IOPS."""
    for number in range(1, 6):
        record(db_target, "S1", number, slow=1 / 3 if number == 5 else 1.0)
        record(db_target, "S2", number, kiops=12.5)
    return db_target


def _site(db: Path | str, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["--db", str(db), "site", "-o", str(out)]) == 0
    return capsys.readouterr().out


def test_the_site_shows_drives_series_and_the_throttled_build_alone_as_an_alert(
    lab: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    line = _site(lab, out, capsys)
    assert re.fullmatch(
        rf"site: 3 pages written, 0 kept \(unchanged\), (\d+) alerts -> {out}/index.html\n", line
    )
    index = (out / "index.html").read_text()
    assert '<table id="drives">' in index and '<table id="suites">' in index
    assert index.count('<tr class="drive"') == 2
    (suite,) = re.findall(r'<tr class="suite" data-suite="smoke">.*?</tr>', index)
    assert re.search(r'href="series/\w+\.html"', suite)  # the smoke suite's series
    alerts = (out / "alerts.html").read_text()
    found = re.findall(
        r'<tr class="alert" data-series="(\w+)" data-build="(\w+)" data-drive="([^"]+)"', alerts
    )
    # the step down at b5 on S1, in IOPS (and p99 has no values here): none on S2, none elsewhere
    assert [(build, drive) for _, build, drive in found] == [("b5", "drive S1")]
    row = alerts.split('<tr class="alert"')[1]
    assert "regressed" in row and row.count('class="run-report"') == 2
    assert "/nonexistent/run-S1-4/report.html" in row and "/nonexistent/run-S1-5/report.html" in row
    (series,) = (out / "series").iterdir()
    page = series.read_text()
    assert f'<div class="chart" data-series="{found[0][0]}">' in page
    data = json.loads(re.search(r'id="chart-data">(.*?)</script>', page).group(1))  # type: ignore[union-attr]
    assert data["builds"] == list(BUILDS[:5])
    s1 = next(t for t in data["traces"] if t["name"].startswith("drive S1"))
    assert s1["steps"] == ["b5"] and s1["unit"] == "IOPS" and len(s1["points"][0]["ys"]) == 5
    s2 = next(t for t in data["traces"] if t["name"].startswith("drive S2"))
    assert s2["steps"] == [] and s2["datasheet"] == 12_500 and s1["datasheet"] is None
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    assert (out / "assets" / "chart.js").is_file()


def test_noise_alone_raises_no_alert(
    db_target: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for number in range(1, 7):
        record(db_target, "S2", number)
    assert ", 0 alerts ->" in _site(db_target, tmp_path / "site", capsys)


def test_a_second_build_rewrites_only_what_changed_and_keeps_the_marks(
    lab: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    _site(lab, out, capsys)
    key = re.search(r'data-series="(\w+)"', (out / "alerts.html").read_text()).group(1)  # type: ignore[union-attr]
    assert _site(lab, out, capsys).startswith("site: 0 pages written, 3 kept")
    (out / "marks.json").write_text(json.dumps({f"{key}@b5": "expected"}))
    again = _site(lab, out, capsys)
    assert again.startswith("site: 1 pages written, 2 kept")  # the alerts page, marked
    assert "<td>expected</td>" in (out / "alerts.html").read_text()
    record(lab, "S2", 6)  # one more run: its series' page and the index change, not the alerts
    assert _site(lab, out, capsys).startswith("site: 2 pages written, 1 kept")
    assert "<td>expected</td>" in (out / "alerts.html").read_text()
    assert json.loads((out / "marks.json").read_text()) == {f"{key}@b5": "expected"}


def test_a_bad_marks_file_is_one_line(
    lab: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "marks.json").write_text('{"x@b5": "fine"}')
    assert main(["--db", str(lab), "site", "-o", str(out)]) != 0
    err = capsys.readouterr().err
    assert "marks.json: 'x@b5' is marked 'fine': give one of expected, regression" in err
    assert "Traceback" not in err


def test_a_folder_that_cannot_be_made_is_one_line(
    lab: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("a file")
    assert main(["--db", str(lab), "site", "-o", str(tmp_path / "taken")]) != 0
    err = capsys.readouterr().err
    assert f"cannot write {tmp_path / 'taken'}: File exists" in err and "Traceback" not in err
