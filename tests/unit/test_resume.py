"""--ssd-resume without fio: what a run cut short left, and which drives may continue it."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from pytest_ssd.db import ResultsDb, RunWriter, TestRecords
from pytest_ssd.db.unfinished import FinishedTest, finished_tests
from pytest_ssd.db.url import db_url
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ConfigError
from pytest_ssd.results.record import PROPERTY
from pytest_ssd.results.transition import Transition
from pytest_ssd.session.resume import (
    PROPERTIES,
    Resumed,
    keep_properties,
    recorded_properties,
    run_id_option,
)
from tests.unit.db_fixtures import CORNERS, corner, write_run
from tests.unit.test_host_settings import LOOP as HOST_LOOP

CUT = "suites/smoke/test_corners.py::test_cut_short[d0]"


def _counts(target: Path | str) -> tuple[int, int, int, int]:
    with ResultsDb(target) as db:
        return tuple(  # type: ignore[return-value]
            int(db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in ("tests", "measurements", "metrics", "transitions")
        )


def test_a_resumed_writer_forgets_the_cut_test_and_numbers_its_rows_after_the_last(
    db_target: Path | str, tmp_path: Path
) -> None:
    writer = write_run(db_target, "20261126-090000-aaaaaaaaaaaa", "drive", finish=False)
    # a test cut short: its transition and measurement written, its outcome never
    cut = dataclasses.replace(corner("d0", CORNERS[0], 1.0), test=CUT)
    move = Transition(
        device="d0",
        test=CUT,
        source=None,
        target="cssd",
        reason="state unknown",
        steps=[],
        start="2026-11-26T09:00:00.000+00:00",
        end="2026-11-26T09:00:09.000+00:00",
        seconds=9.0,
    )
    writer.add(TestRecords(CUT, measurements=[cut], transitions=[move]))
    writer.close()
    assert _counts(db_target) == (4, 5, 5, 1)

    again = RunWriter(db_target, writer.run_id, tmp_path, {"host": "lab"})
    assert again.forget_unfinished() == [CUT]
    assert _counts(db_target) == (4, 4, 4, 0)
    # the test runs again: its rows come after the run's last, none is lost to a number taken
    measured = [dataclasses.replace(corner("d0", shape, 2.0), test=CUT) for shape in CORNERS]
    again.add(TestRecords(CUT, measurements=measured, transitions=[move]))
    again.test_done(CUT, "passed", 2.0, None)
    again.finish({"passed": 5}, complete=True)
    assert _counts(db_target) == (5, 8, 8, 1)
    with ResultsDb(db_target) as db:
        kept = finished_tests(db.conn, writer.run_id)
    assert len(kept) == 5 and kept[CUT].outcome == "passed"


LOOP = dataclasses.replace(HOST_LOOP, backing_file="/srv/a.img")
NVME = dataclasses.replace(LOOP, path="/dev/nvme0n1", model="M", serial="S1", transport="nvme")


def _resumed(**drives: DeviceIdentity) -> Resumed:
    described = {dut: {"identity": identity.as_dict()} for dut, identity in drives.items()}
    return Resumed("20261126-090000-aaaaaaaaaaaa", Path("/runs/x"), drives=described)


@pytest.mark.parametrize(
    ("then", "now"),
    [
        (NVME, dataclasses.replace(NVME, serial="S2")),
        (NVME, dataclasses.replace(NVME, size_bytes=512 << 20)),
        (NVME, dataclasses.replace(NVME, model="N")),
        (LOOP, dataclasses.replace(LOOP, backing_file="/srv/b.img")),
    ],
)
def test_another_drive_is_refused_in_one_line(then: DeviceIdentity, now: DeviceIdentity) -> None:
    with pytest.raises(ConfigError) as refused:
        _resumed(d0=then).check_devices({"d0": now}, set())
    message = str(refused.value)
    assert "\n" not in message and "d0 is not the drive run" in message, message


def test_the_same_drive_passes_and_a_scratch_device_is_said_to_be_new() -> None:
    renamed = dataclasses.replace(NVME, path="/dev/disk/by-id/x")  # a serial says which drive
    assert _resumed(d0=NVME).check_devices({"d0": renamed}, set()) == []
    notes = _resumed(s=LOOP).check_devices({"s": dataclasses.replace(LOOP, size_bytes=1)}, {"s"})
    assert len(notes) == 1 and "reaches every state again" in notes[0]


def test_other_devices_than_the_run_measured_are_refused() -> None:
    with pytest.raises(ConfigError, match="measured d0, this session d1"):
        _resumed(d0=NVME).check_devices({"d1": NVME}, set())


def test_a_test_is_the_same_whatever_the_workers_of_either_run() -> None:
    plain = "suites/csd/test_low_qd.py::test_low_qd[loop3-seq-cssd1-qd1]"
    said = (("seq.read.iops", 1.5), ("seq.read.iops.baseline", "same"))
    found = FinishedTest(f"{plain}@dut-loop3", "passed", 1.0, None, said)  # recorded under -n
    resumed = Resumed.keeping("20261126-090000-aaaaaaaaaaaa", Path("/r"), [found], ("loop3",))
    assert resumed.kept_test(plain) is found  # resumed without -n
    assert resumed.kept_test(f"{plain}@dut-loop3") is found
    other = Resumed.from_workerinput(resumed.workerinput())  # on a worker
    assert other.kept_test(f"{plain}@dut-loop3") == found
    # two devices' tests of one point stay two
    both = Resumed.keeping("r", Path("/r"), [found], ("loop3", "loop4"))
    assert both.kept_test(plain.replace("loop3", "loop4")) is None


def test_a_tests_properties_are_the_last_written_and_a_cut_line_is_skipped(
    tmp_path: Path,
) -> None:
    keep_properties(tmp_path, "t[d0]", [("a.read.iops", 1.5), (PROPERTY, "{...}")])
    keep_properties(tmp_path, "t[d0]", [("a.read.iops", 2.5), ("note", {"x": 1})])
    keep_properties(tmp_path, "u[d0]", [("b", "word")])
    with (tmp_path / PROPERTIES).open("a") as fh:
        fh.write('["v[d0]", [["c", 1')  # a kill mid-line
    found = recorded_properties(tmp_path)
    assert found == {
        "t[d0]": (("a.read.iops", 2.5), ("note", "{'x': 1}")),
        "u[d0]": (("b", "word"),),
    }
    assert recorded_properties(tmp_path / "gone") == {}


def test_the_time_saved_is_wall_time_never_added_across_workers() -> None:
    def kept(device: str, point: str, seconds: float) -> FinishedTest:
        return FinishedTest(f"s/t.py::t[{device}-{point}]", "passed", seconds)

    tests = [kept("loop3", "a", 20.0), kept("loop3", "b", 25.0), kept("loop4", "a", 15.0)]
    resumed = Resumed.keeping("r", Path("/r"), tests, ("loop3", "loop4"))
    assert resumed.saved_s == 60.0 and resumed.saved_side_by_side_s == 45.0
    assert resumed.saved() == "about 60 s of wall time (about 45 s with a worker per device, -n)"
    alone = Resumed.keeping("r", Path("/r"), tests[:2], ("loop3",))
    assert alone.saved() == "about 45 s of wall time", "one device: one figure"


def test_a_given_run_id_is_a_new_run_until_the_database_has_it_then_that_run(
    tmp_path: Path,
) -> None:
    """--ssd-run-id: no database yet or no such run, a new run (nothing made); a run cut
    short, resumed; a finished run, refused in one line naming the option."""
    db = db_url(tmp_path / "results.sqlite")
    cut, done = tmp_path / "ci-7-host-a-nvme0", tmp_path / "ci-8-host-a-nvme0"
    assert Resumed.given(db, cut) is None
    assert not (tmp_path / "results.sqlite").exists(), "looking made no database"
    write_run(tmp_path / "results.sqlite", "ci-6-host-a-nvme0", "drive").close()
    assert Resumed.given(db, cut) is None
    write_run(tmp_path / "results.sqlite", cut.name, "drive", finish=False).close()
    cut.mkdir()
    resumed = Resumed.given(db, cut)
    assert resumed is not None and (resumed.run_id, resumed.run_dir) == (cut.name, cut)
    assert len(resumed.kept) == len(CORNERS) and resumed.option == "--ssd-run-id"
    write_run(tmp_path / "results.sqlite", done.name, "drive").close()
    done.mkdir()
    (done / "report.html").write_text("")
    with pytest.raises(
        ConfigError,
        match=r"^--ssd-run-id=ci-8-host-a-nvme0: run ci-8-host-a-nvme0 finished \(.*\): it is"
        r" not run again: give another id for a new run$",
    ):
        Resumed.given(db, done)


@pytest.mark.parametrize(
    "text", ["1234-qualify-host-a-nvme0", "20261126-090000-aaaaaaaaaaaa", "fw1.3.0_a"]
)
def test_a_run_id_may_be_given(text: str) -> None:
    assert run_id_option(text) == text


@pytest.mark.parametrize(
    "text", ["", "a/b", "../x", ".hidden", "latest", "last", "a b", "x\n", "x" * 101]
)
def test_a_run_id_that_is_not_one_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^--ssd-run-id=.* is not a run id: "):
        run_id_option(text)
