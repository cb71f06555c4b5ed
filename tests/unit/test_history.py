"""Series a lab can follow: each measurement's series identity and ``pytest-ssd history``.

On both backends (``db_target``): runs written through the real writer, read
back by the queries and the command line.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import EXIT_DB, EXIT_USAGE, main
from pytest_ssd.cli.history import changes, graph, table
from pytest_ssd.db import ResultsDb, RunWriter, TestDone, TestRecords
from pytest_ssd.db.arrays import pack
from pytest_ssd.db.history import FoundSeries, find_series, history
from pytest_ssd.results.history import HistoryRow, SeriesIdentity, without_repetition
from pytest_ssd.results.record import Measurement, SeriesRecord
from tests.unit.db_fixtures import CORNERS, corner, description

#: two repeats' histograms (ns, count): p99 100 µs and 200 µs apart, 200 µs pooled
REPEATS = ([(100_000, 99), (1_000_000, 1)], [(200_000, 100)])


def _drive(serial: str, firmware: str, size: int = 2**31) -> dict[str, Any]:
    found = description("d0", f"drive {serial}", serial)
    found["identity"] = {**found["identity"], "firmware": firmware, "size_bytes": size}
    return found


def _measured(repeat: int, iops: float) -> Measurement:
    m = corner("d0", CORNERS[0], iops)
    workload = {**m.workload, "repeat": repeat, "state": "sustained", "profile": "quick"}
    return Measurement(**{**m.as_dict(), "workload": workload})


def record_run(target: Path | str, run_id: str, drive: dict[str, Any], start: str) -> None:
    """A run of one drive: seq-read twice (--ssd-repeat 2), each with its histogram."""
    writer = RunWriter(target, run_id, Path("/nonexistent") / run_id, {"cpu": "Xeon"}, start)
    writer.add_device("d0", drive, drive["label"])
    for repeat, bins in enumerate(REPEATS, start=1):
        m = _measured(repeat, 1000.0 * repeat)
        ns, count = zip(*bins, strict=True)
        series = SeriesRecord(device="d0", name=f"{m.name}.clat-read", meta={}, file="")
        writer.add(TestRecords(m.test, [m], series=[(series, pack({"ns": ns, "count": count}))]))
    writer.finish({"passed": 1}, complete=True)


@pytest.fixture
def lab(db_target: Path | str) -> Path | str:
    """Three runs: two drives of one model and size (firmware 1.0, 2.0), one of another size."""
    record_run(db_target, "run-1", _drive("S1", "1.0"), "2026-11-01T10:00:00")
    record_run(db_target, "run-2", _drive("S2", "2.0"), "2026-11-02T10:00:00")
    record_run(db_target, "run-3", _drive("S3", "2.0", size=2**32), "2026-11-03T10:00:00")
    return db_target


def test_a_series_is_the_same_across_firmware_and_serial_not_across_sizes(lab: Path | str) -> None:
    with ResultsDb(lab) as db:
        found = find_series(db.conn, point="seq-read", model="test ssd")
        assert sorted(s.runs for s in found) == [1, 2]
        two = next(s for s in found if s.runs == 2)
        assert two.identity == SeriesIdentity(
            model="Test SSD",
            size_bytes=2**31,
            point="suites/smoke/test_corners.py::test_four_corners[seq-read] seq-read",
            state="sustained",
            profile="quick",
            host_class="? ?x Xeon",
        )
        assert two.key == two.identity.key and two.measurements == 4
        rows = history(db.conn, two.key)
    assert [(r.run_id, r.firmware, r.serial, r.n) for r in rows] == [
        ("run-1", "1.0", "S1", 2),
        ("run-2", "2.0", "S2", 2),
    ]
    # the repeats' histograms pooled: p50 and p99 of all 200 I/Os, not the mean of the
    # repeats' own (150 µs each); p99.9 needs 1,000 I/Os: not resolved
    assert rows[0].percentiles == {50.0: 200.0, 99.0: 200.0, 99.9: None}
    assert rows[0].source == "pooled bins" and rows[0].iops == 1500.0
    # each repeat's own figures, for the graph's spread: its IOPS, fio's own p99
    assert rows[0].iops_each == (1000.0, 2000.0) and rows[0].p99_each == (300.0, 300.0)


def test_history_prints_the_table_and_draws_the_graph(
    lab: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--db", str(lab), "--point", "seq-read"]) == 0
    listed = capsys.readouterr().out
    assert "2 series: pick one with --series KEY" in listed
    with ResultsDb(lab) as db:
        key = next(s.key for s in find_series(db.conn) if s.runs == 2)
    graph = tmp_path / "history.png"
    assert main(["history", "--db", str(lab), "--series", key[:6], "-o", str(graph)]) == 0
    out = capsys.readouterr().out
    assert f"series {key}: Test SSD 2 GB" in out
    lines = [line for line in out.splitlines() if line.startswith("2026-11-0")]
    assert len(lines) == 2 and "1.0" in lines[0] and "2.0" in lines[1]
    assert "200.0" in lines[0] and "pooled bins" in lines[0]
    assert graph.read_bytes().startswith(b"\x89PNG")


def test_history_refuses_in_one_line(
    lab: Path | str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--db", str(lab), "--model", "no such drive"]) == EXIT_DB
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no series matches model 'no such drive'" in err
    drawn = tmp_path / "g.png"
    assert main(["history", "--db", str(lab), "--point", "seq", "-o", str(drawn)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "narrow with --series" in err and not drawn.exists()


def test_a_tests_records_and_its_outcome_are_one_transaction(tmp_path: Path) -> None:
    """What the session sends for a test (its records and outcome) commits once, not twice."""
    writer = RunWriter(tmp_path / "results.sqlite", "run-1", tmp_path, {})
    writer.add_device("d0", _drive("S1", "1.0"), "drive")
    sent: list[str] = []
    writer.conn.raw.set_trace_callback(sent.append)
    m = _measured(1, 1000.0)
    writer.add(TestRecords(m.test, [m], done=TestDone(m.test, "passed", 0.5, None, "smoke")))
    assert [s for s in sent if s.startswith(("BEGIN", "COMMIT"))] == ["BEGIN IMMEDIATE", "COMMIT"]
    writer.finish({"passed": 1}, complete=True)
    with ResultsDb(tmp_path / "results.sqlite") as db:
        found = db.results(db.run("run-1").drives[0])
    assert found.tests == {m.test: "passed"} and found.suites == {m.test: "smoke"}
    assert len(found.measurements) == 1


def test_the_tables_latencies_are_each_in_the_unit_that_fits_it(lab: Path | str) -> None:
    # a column's unit set by its largest value wrote a 70 µs p50 as "0.07 ms"
    with ResultsDb(lab) as db:
        one = next(s for s in find_series(db.conn) if s.runs == 2)
        first, second = history(db.conn, one.key)
    slow = {50.0: 716.8, 99.0: 1_500.0, 99.9: 2_164_260.86}
    fast = {50.0: 70.25, 99.0: 900.0, 99.9: 398.3}
    rows = [replace(first, percentiles=slow), replace(second, percentiles=fast)]
    head, *lines = table(one, rows).splitlines()[1:]
    assert head.split()[-5:] == ["p50", "p99", "p99.9", "percentiles", "from"]
    cells = [line.split()[-8:-2] for line in lines]
    assert cells == [
        ["716.8", "µs", "1.50", "ms", "2.16", "s"],
        ["70.2", "µs", "900.0", "µs", "398.3", "µs"],
    ], cells


def _build_row(build: str, iops: float, p99_us: float, run: str) -> HistoryRow:
    each = tuple(iops * k for k in (1.0, 1.01, 0.99, 1.005, 0.995))
    p99s = tuple(p99_us * k for k in (1.0, 1.01, 0.99, 1.005, 0.995))
    return HistoryRow(
        run, f"2026-11-0{run[-1]}T10:00", "lab", build, "S1", "read", 5, iops, iops / 256,
        {50.0: p99_us / 4, 99.0: p99_us, 99.9: None}, "pooled bins", each, p99s, build,
    )  # fmt: skip


def test_changes_between_builds_are_judged_on_their_repeats_and_drawn(tmp_path: Path) -> None:
    rows = [
        _build_row("1.0", 80_000, 2_000.0, "run-1"),
        _build_row("1.1", 80_500, 2_010.0, "run-2"),
        _build_row("1.2", 40_000, 8_000.0, "run-3"),  # slower and a longer tail
    ]
    found = {(c.build, c.metric): (c.verdict, c.ratio) for c in changes(rows)}
    assert found == {
        ("1.1", "iops"): ("same", pytest.approx(80_500 / 80_000)),
        ("1.1", "p99"): ("same", pytest.approx(2_010 / 2_000)),
        ("1.2", "iops"): ("regressed", pytest.approx(40_000 / 80_500)),
        ("1.2", "p99"): ("regressed", pytest.approx(8_000 / 2_010)),
    }
    one = FoundSeries(
        "k" * 16, SeriesIdentity(None, None, "p", None, "quick", "host 10.0.0.7:22"), 15, 3, ""
    )
    svg = graph(one, rows, tmp_path / "h.svg").decode()
    # matplotlib writes each text as a comment beside its glyphs
    assert "<!-- p99 latency (ms) -->" in svg, "the axis in the unit of its values"
    assert "<!-- 1.2 -->" in svg and "<!-- 0.50× -->" in svg, "builds on x, the change marked"
    assert "host host" not in one.identity.describe() and "host 10.0.0.7:22" in svg


LOW_QD = "suites/csd/test_lowqd.py::test_low_qd[{dut}-rnd-cssd1-qd1-r70]"


def _repetitions(run_id: str, target: Path | str, build: str | None) -> str:
    """A run of one low-QD point measured as three repetitions (rnd-q1-r070-n0 .. n2), each
    with its histogram; the drive's build *build*. The point's test id."""
    drive = {**_drive("S1", "1.0"), "build": build}
    writer = RunWriter(target, run_id, Path("/nonexistent") / run_id, {"cpu": "Xeon"})
    writer.add_device("d0", drive, drive["label"])
    test = LOW_QD.format(dut="d0")
    found = []
    for repetition, bins in enumerate([*REPEATS, [(400_000, 100)]]):
        m = _measured(1, 1000.0 * (repetition + 1))
        name = f"rnd-q1-r070-n{repetition}"
        m = Measurement(**{**m.as_dict(), "test": test, "name": name})
        ns, count = zip(*bins, strict=True)
        series = SeriesRecord(device="d0", name=f"{name}.clat-read", meta={}, file="")
        found.append((m, (series, pack({"ns": ns, "count": count}))))
    writer.add(TestRecords(test, [m for m, _ in found], series=[s for _, s in found]))
    writer.finish({"passed": 1}, complete=True)
    return test


def test_a_points_repetitions_are_one_series_their_spread_its_repeats(
    db_target: Path | str,
) -> None:
    _repetitions("run-1", db_target, "A")
    with ResultsDb(db_target) as db:
        found = find_series(db.conn, point="r070")
        assert len(found) == 1, found  # was three: one per repetition
        one = found[0]
        assert one.identity.point == LOW_QD.format(dut="").replace("[-", "[") + " rnd-q1-r070"
        assert one.measurements == 3 and one.runs == 1 and one.keys == (one.key,)
        (row,) = history(db.conn, *one.keys)
    assert row.n == 3 and row.iops_each == (1000.0, 2000.0, 3000.0) and row.iops == 2000.0
    # every repetition's histogram pooled: 300 I/Os, the slowest third at 400 µs
    assert row.source == "pooled bins" and row.percentiles[99.0] == 400.0
    assert row.build == "A"


def test_a_database_keyed_per_repetition_is_read_as_one_series(tmp_path: Path) -> None:
    """Runs recorded before repetitions were one series keep a key per repetition: read so."""
    db = tmp_path / "results.sqlite"
    test = _repetitions("run-1", db, "A")
    _repetitions("run-2", db, "B")
    raw = sqlite3.connect(db)
    with raw:  # each repetition under the key an older pytest-ssd gave it
        for (name,) in raw.execute("SELECT DISTINCT name FROM measurements").fetchall():
            old = replace(_stored(raw), point=f"{test.replace('[d0-', '[')} {name}")
            raw.execute(
                "INSERT OR IGNORE INTO series_keys VALUES (?, ?, ?, ?, ?, ?, ?)",
                (old.key, *old.as_dict().values()),
            )
            raw.execute("UPDATE measurements SET series_key = ? WHERE name = ?", (old.key, name))
        raw.execute("DELETE FROM series_keys WHERE point NOT LIKE '%-n_'")
    raw.close()
    with ResultsDb(db) as reader:
        (one,) = find_series(reader.conn, point="r070")
        assert one.identity == _stored_of(reader)  # its point without the repetition
        assert one.measurements == 6 and one.runs == 2 and len(one.stored) == 3
        assert [s.key for s in find_series(reader.conn, key=one.key[:5])] == [one.key]
        rows = history(reader.conn, *one.keys)
    assert [(r.run_id, r.n, r.build) for r in rows] == [("run-1", 3, "A"), ("run-2", 3, "B")]


def _stored(raw: sqlite3.Connection) -> SeriesIdentity:
    row = raw.execute("SELECT * FROM series_keys").fetchone()
    return SeriesIdentity(*row[1:])


def _stored_of(reader: ResultsDb) -> SeriesIdentity:
    row = reader.conn.execute("SELECT * FROM series_keys").fetchone()
    return without_repetition(SeriesIdentity(*list(row)[1:]))


def test_history_names_builds_and_keeps_those_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    for run_id, build in (("run-1", "A"), ("run-2", None), ("run-3", "B")):
        _repetitions(run_id, db, build)
    with ResultsDb(db) as reader:
        (one,) = find_series(reader.conn)
        rows = history(reader.conn, *one.keys)
    assert [r.shown_build for r in rows] == ["A", "unknown build", "B"]
    # 3 repetitions a build bound no 95 % interval of a ratio: no change is drawn
    assert changes(rows) == []
    assert main(["history", "--db", str(db), "--build", "B", "--build", "A"]) == 0
    out = capsys.readouterr().out
    assert "run-1" in out and "run-3" in out and "run-2" not in out
    assert main(["history", "--db", str(db), "--build", "C"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its builds: A, unknown build, B" in err
