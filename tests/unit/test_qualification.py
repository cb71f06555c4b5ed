"""Qualification checks: read from derived records, judged against a baseline's, carried
by the gate, and shown per drive in the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.db import DriveRef, DriveResults
from pytest_ssd.errors import ConfigError
from pytest_ssd.methods.qual.report import headline, section
from pytest_ssd.report.sections.base import Context, FigureSink, Palette
from pytest_ssd.results.record import Derived
from pytest_ssd.verdict.checks import Check, checks_of, counted, judge_checks
from pytest_ssd.verdict.summary import PASSED, REGRESSED, UNDECIDED, Judged, by_drive, gate


def record(part: str, check: str, verdict: str, detail: str = "d", **more: Any) -> Derived:
    values = {"part": part, "check": check, "verdict": verdict, "detail": detail, **more}
    return Derived(test="qual/test_x.py::test_y", device="d", name="qualification", values=values)


def checks(*pairs: tuple[str, str]) -> list[Check]:
    return [Check("integrity", name, verdict, f"{name} {verdict}") for name, verdict in pairs]


def test_a_drive_keeps_the_worse_of_two_records_of_a_check() -> None:
    found = checks_of(
        [
            record("integrity", "after trim", "pass"),
            record("integrity", "after trim", "fail", "LBA 7"),
            record("power loss", "flushed writes survive", "not judged"),
            Derived(test="t", device="d", name="other", values={}),
            record("integrity", "broken", "maybe"),  # not of the contract's shape: left out
        ]
    )
    assert [(c.part, c.check, c.verdict) for c in found] == [
        ("integrity", "after trim", "fail"),
        ("power loss", "flushed writes survive", "not judged"),
    ]
    assert counted(found) == "1 fail, 1 not judged"


def test_a_check_is_one_line_of_a_known_verdict() -> None:
    with pytest.raises(ConfigError, match="is not one of pass, fail, not judged"):
        Check("integrity", "x", "passed", "d")
    with pytest.raises(ConfigError, match="one line"):
        Check("integrity", "x", "pass", "a\nb")


def test_checks_judged_against_the_baseline() -> None:
    base = checks(("a", "pass"), ("b", "pass"), ("c", "pass"), ("d", "fail"), ("e", "not judged"))
    new = checks(("a", "pass"), ("b", "fail"), ("c", "not judged"), ("d", "pass"), ("f", "pass"))
    judged = {v.check: v.verdict for v in judge_checks(base, new)}
    assert judged == {
        "a": "same",
        "b": "failed",
        "c": "unknown",  # passed before, not judged now: nothing says it still passes
        "d": "passed",
        "e": "not judged",  # neither side judged it: not counted
        "f": "passed",
    }
    absent = judge_checks(checks(("a", "pass")), [])
    assert [(v.verdict, v.new) for v in absent] == [("unknown", None)]
    assert "absent" in absent[0].line()


def test_the_gate_fails_on_a_failed_check_with_its_line() -> None:
    drive = Judged("lab (loop3)")
    failed = judge_checks(checks(("a", "pass")), [Check("integrity", "a", "fail", "LBA 100 bad")])
    code, said = gate(by_drive([], [(drive, v) for v in failed]))
    assert code == REGRESSED
    assert said == "gate failed: lab (loop3): integrity · a failed: LBA 100 bad"


def test_unknown_checks_count_toward_allow_unknown() -> None:
    drive = Judged("lab")
    judged = judge_checks(checks(("a", "pass"), ("b", "pass")), checks(("a", "pass")))
    drives = by_drive([], [(drive, v) for v in judged])
    assert drives[0].unknown_share == 0.5
    assert gate(drives)[0] == UNDECIDED
    assert gate(drives, allow_unknown=0.5) == (
        PASSED,
        "gate passed: no regression, unknown within the 50 % allowed",
    )
    assert drives[0].advice() == (
        "1 qualification check(s) passed in the baseline and are not judged in the new run"
        " (integrity · b, ...): run them there"
    )
    same = by_drive(
        [], [(drive, v) for v in judge_checks(checks(("a", "pass")), checks(("a", "pass")))]
    )
    assert gate(same) == (PASSED, "gate passed: no regression")
    assert "qualification checks: 1 same" in same[0].counted()


def test_checks_judged_by_neither_side_judge_nothing() -> None:
    judged = judge_checks(checks(("a", "not judged")), checks(("a", "not judged")))
    code, said = gate(by_drive([], [(Judged("lab"), v) for v in judged]))
    assert code == UNDECIDED and "nothing was judged" in said


def _drive(label: str, derived: list[Derived]) -> DriveResults:
    return DriveResults(DriveRef("run-1", label, label), derived=derived)


def test_the_section_lists_each_drives_checks_worst_first(tmp_path: Path) -> None:
    a = _drive(
        "lab",
        [
            record("integrity", "after trim", "pass", "ok"),
            record("integrity", "x", "fail", "LBA 9"),
        ],
    )
    b = _drive("other", [])
    ctx = Context((a, b), 2, Palette.of((a, b)), FigureSink(tmp_path), suite="qual")
    built = section(ctx)
    assert built is not None and built.id == "ssd-suite-qual"
    assert "lab: 1 pass, 1 fail" in built.body and "other" not in built.body
    assert built.body.index("LBA 9") < built.body.index("ok"), "the failed check first"
    (figure,) = headline(ctx, a)
    assert figure.value == "1 pass, 1 fail" and figure.where == "failed: integrity · x"
    assert headline(ctx, b) == []
    assert section(Context((b,), 1, Palette.of((b,)), FigureSink(tmp_path))) is None
