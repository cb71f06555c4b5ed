"""A verdict knows what differed between the two runs' environments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import main
from pytest_ssd.db import ResultsDb
from pytest_ssd.verdict.environment import differences
from pytest_ssd.verdict.reference import Baseline
from pytest_ssd.verdict.source import compare_runs
from tests.unit.test_verdict_compare import write_repeated


def _setting(key: str, value: str, device: str | None = None) -> dict[str, Any]:
    return {"key": key, "value": value, "device": device, "host": None, "title": key}


def _env(fio: str = "fio-3.33", busy: str = "0", governor: str = "performance") -> dict[str, Any]:
    return {
        "fio": fio,
        "host_settings": [
            _setting("governor", governor),
            _setting("scheduler", "none", "nvme0n1"),
            _setting("busy-processes", busy),
        ],
        "tune": {"requested": False, "changed": []},
    }


def test_what_moves_a_measurement_is_named_and_nothing_else() -> None:
    assert differences(_env(), _env()) == []
    assert differences({}, _env()) == [], "not recorded on a side: nothing to say"
    assert differences(_env(), _env(fio="fio-3.36", governor="powersave")) == [
        "fio fio-3.33 then, fio-3.36 now",
        "governor performance then, powersave now",
    ]
    busy = _env(busy="2 (stress 4141 95%, kworker 12 11%)")
    assert differences(_env(), busy) == [
        "other processes used 0% of a CPU during the baseline, 106% during the new run"
    ]
    assert differences(_env(busy="1 (sshd 9 20%)"), _env()) == [], "under half a CPU apart"
    tuned = {**_env(), "tune": {"requested": True, "changed": ["governor performance"]}}
    assert differences(_env(), tuned) == ["--ssd-tune did not do the same in both runs"]


def test_a_regression_measured_in_another_environment_is_unknown_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "results.sqlite"
    write_repeated(db, "run-a", "fw 1", {}, environment=_env())
    write_repeated(db, "run-b", "fw 2", {"rnd-read": 0.5}, environment=_env(fio="fio-3.36"))
    with ResultsDb(db) as found:
        verdicts = [v for _, v in compare_runs(found, "fw 1", "fw 2")]
    slowed = [v for v in verdicts if v.point == "rnd-read" and v.metric == "iops"]
    assert [v.verdict for v in slowed] == ["unknown"]
    assert slowed[0].reason == ("the runs' environments differ: fio fio-3.33 then, fio-3.36 now")
    assert {v.verdict for v in verdicts} == {"same", "unknown"}, "a 'same' still holds"
    gate = ["--db", str(db), "compare", "fw 1", "fw 2", "--gate", "-o", str(tmp_path / "c.html")]
    assert main(gate) == 5, "not a pass, not a failure of the build"
    said = capsys.readouterr().out.splitlines()
    assert said[-2] == (
        "  2 unknown because the runs' environments differ: fio fio-3.33 then, fio-3.36 now:"
        " measure both builds on one host in one state (see the report's host and environment)"
    )


def test_a_runs_baseline_keeps_its_caveats_for_the_workers(tmp_path: Path) -> None:
    base = Baseline("fw 1", {"d0": "run a, fw 1"}, {}, {}, environments={"d0": _env()})
    assert base.judged_in(_env()).caveats == {}
    judged = base.judged_in(_env(governor="powersave"))
    assert judged.caveats == {"d0": ["governor performance then, powersave now"]}
    judged.save(tmp_path)
    loaded = Baseline.load(tmp_path)  # as a worker reads it
    assert loaded is not None and loaded.caveats == judged.caveats


def test_a_change_beyond_what_a_host_moves_stands_and_says_what_differed(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    write_repeated(db, "run-a", "fw 1", {}, environment=_env())
    write_repeated(db, "run-b", "fw 2", {"rnd-read": 0.2}, environment=_env(fio="fio-3.36"))
    with ResultsDb(db) as found:
        verdicts = [v for _, v in compare_runs(found, "fw 1", "fw 2")]
    (slowed,) = [v for v in verdicts if v.point == "rnd-read" and v.metric == "iops"]
    assert slowed.verdict == "regressed"
    assert slowed.reason == "2× or more although fio fio-3.33 then, fio-3.36 now"
