"""Health rules: the health log as fields, profiles and their errors, what a step broke."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_ssd.db import DriveResults
from pytest_ssd.db.model import DriveRef
from pytest_ssd.errors import DatasheetError, ToolError
from pytest_ssd.health.log import (
    HealthLog,
    newest_error,
    parse_nvme_smart_log,
    parse_smartctl_health,
)
from pytest_ssd.health.profile import (
    HealthProfileError,
    default_profile,
    load_profile,
    parse_profile,
)
from pytest_ssd.health.watch import HEALTH_RECORD, HealthWatch, Step
from pytest_ssd.plugin.health import after_test, around_state
from pytest_ssd.report.sections.base import Context, FigureSink, Palette
from pytest_ssd.report.sections.health import health
from pytest_ssd.results.record import Derived
from pytest_ssd.specs import load_datasheet

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "health"
#: QEMU's id-ctrl: WCTEMP 343 K, CCTEMP 373 K
QEMU_LIMITS = {"warning_temperature": 69.85, "critical_temperature": 99.85}


def qemu(**changes: float) -> HealthLog:
    """QEMU's real smart log (nvme-cli 2.3) with *changes*."""
    values = parse_nvme_smart_log((GOLDEN / "nvme-smart-log.json").read_text())
    return HealthLog({**values, **QEMU_LIMITS, **changes}, "nvme smart-log")


def test_qemus_smart_log_as_fields() -> None:
    values = parse_nvme_smart_log((GOLDEN / "nvme-smart-log.json").read_text())
    assert values == {
        "critical_warning": 0,
        "available_spare": 0,
        "available_spare_threshold": 0,
        "percentage_used": 0,
        "media_errors": 0,  # a 128-bit counter: a string in nvme-cli's JSON
        "error_log_entries": 0,
        "unsafe_shutdowns": 0,
        "warning_temp_time": 0,
        "critical_comp_time": 0,
        "temperature": 49.85,
    }


def test_the_error_logs_newest_entry() -> None:
    assert newest_error((GOLDEN / "nvme-error-log.json").read_text()) == {}, "QEMU's: empty"
    entries = {"errors": [{"error_count": 1, "status_field": 2}, {"error_count": 3, "sqid": 1}]}
    assert newest_error(json.dumps(entries)) == {"error_count": 3, "sqid": 1}


def test_a_sata_drives_smartctl_as_fields() -> None:
    data = json.loads((GOLDEN / "smartctl-sata.json").read_text())
    data["smart_status"] = {"passed": False}
    data["ata_smart_attributes"]["table"].append({"id": 187, "raw": {"value": 2}})
    data["ata_smart_error_log"] = {"summary": {"count": 5}}
    values = parse_smartctl_health(json.dumps(data))
    assert values == {
        "critical_warning": 1,
        "temperature": 34,
        "media_errors": 2,
        "error_log_entries": 5,
    }


def test_the_default_profile_keeps_qemus_drive() -> None:
    profile = default_profile()
    assert [f"{r.field} {r.text}" for r in profile.rules] == [
        "critical_warning == 0",
        "media_errors unchanged",
        "error_log_entries unchanged",
        "available_spare >= available_spare_threshold",
        "temperature < warning_temperature",
        "percentage_used delta <= 1",
    ]
    assert profile.broken(qemu(), qemu(), first=True) == []


@pytest.mark.parametrize(
    ("after", "line"),
    [
        ({"media_errors": 3}, "media_errors 0 → 3 (rule: unchanged)"),
        ({"critical_warning": 4}, "critical_warning 0 → 4 (rule: == 0)"),
        ({"percentage_used": 2}, "percentage_used 0 → 2 (rule: delta <= 1)"),
        (
            {"temperature": 71.5},
            "temperature 49.85 → 71.5 (rule: < warning_temperature = 69.85)",
        ),
        (
            {"available_spare": 5, "available_spare_threshold": 10},
            "available_spare 0 → 5 (rule: >= available_spare_threshold = 10)",
        ),
    ],
)
def test_a_step_that_breaks_a_default_rule_names_the_field_before_and_after(
    after: dict[str, float], line: str
) -> None:
    assert default_profile().broken(qemu(), qemu(**after)) == [line]


def test_a_value_rule_broken_before_the_step_is_not_its_fault_but_the_first_says_so() -> None:
    hot = qemu(temperature=75.0)
    watch = HealthWatch(None, "", default_profile())
    assert watch.profile.broken(hot, hot) == [], "broken before: not this step's"
    # the first step of a device says what the drive had before the first test
    reader = _Serving([hot, hot, hot])
    watch = HealthWatch(reader, "stand-in", default_profile())
    first = watch.step("test", watch.snapshot())
    assert first is not None and first.broken == (
        "temperature 75 → 75 (rule: < warning_temperature = 69.85) before the first test",
    )
    second = watch.step("test", first.after)
    assert second is not None and second.broken == ()
    assert second.as_dict()["verdict"] == "kept"


def test_a_field_the_drive_does_not_report_is_not_judged() -> None:
    sata = HealthLog({"critical_warning": 0, "temperature": 40}, "smartctl")
    profile = default_profile()
    assert profile.broken(sata, HealthLog({**sata.values, "temperature": 90}, "smartctl")) == []
    assert profile.unreported(sata) == [
        "available_spare",
        "available_spare_threshold",
        "error_log_entries",
        "media_errors",
        "percentage_used",
        "warning_temperature",
    ]


def test_a_profile_with_arrays_and_numbers(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[health]\navailable_spare = [">= 80", ">= available_spare_threshold"]\n')
    profile = load_profile(path)
    assert profile.broken(qemu(available_spare=100), qemu(available_spare=79)) == [
        "available_spare 100 → 79 (rule: >= 80)"
    ]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"media": "unchanged"}, "x.toml: health.media: unknown field: use critical_warning, "),
        ({"media_errors": 0}, "x.toml: health.media_errors: must be a rule or an array of rules"),
        ({"media_errors": "== zero"}, "'== zero': 'zero' is no field: use critical_warning"),
        ({"media_errors": "delta <= media_errors"}, "'delta <= media_errors': a delta takes"),
        ({}, "x.toml: health: must be a table of rules, one key per field"),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_key(table: object, message: str) -> None:
    with pytest.raises(HealthProfileError) as raised:
        parse_profile(table, "x.toml")
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_datasheets_health_table_and_its_errors(tmp_path: Path) -> None:
    sheet = (Path(__file__).parents[2] / "datasheets" / "samsung-850-evo-1tb.toml").read_text()
    path = tmp_path / "s.toml"
    path.write_text(sheet + '\n[health]\nmedia_errors = "unchanged"\n')
    loaded = load_datasheet(path).health
    assert loaded is not None and loaded.origin == str(path)
    path.write_text(sheet + '\n[health]\nmedia_errors = "same"\n')
    with pytest.raises(DatasheetError) as raised:
        load_datasheet(path)
    assert str(raised.value).startswith(f"{path}: health.media_errors: 'same' is no rule")


class _Serving:
    """A reader serving *logs* in turn."""

    name = "stand-in"

    def __init__(self, logs: list[HealthLog]) -> None:
        self.logs = logs

    def read(self, previous: HealthLog | None) -> HealthLog:
        return self.logs.pop(0)


class _Broken:
    name = "nvme smart-log"

    def read(self, previous: HealthLog | None) -> HealthLog:
        raise ToolError("nvme smart-log /dev/nvme0n1: exit 1")


def test_an_unreadable_log_stops_the_reads_and_is_said_once() -> None:
    watch = HealthWatch(_Broken(), "nvme smart-log", default_profile())
    assert watch.latest() is None and watch.step("test", None) is None
    assert watch.error == "nvme smart-log: nvme smart-log /dev/nvme0n1: exit 1"
    assert watch.unsaid_error() == watch.error and watch.unsaid_error() is None


def _drive(dut_id: str, description: dict[str, object], steps: list[dict[str, object]]) -> Any:
    ref = DriveRef("run", dut_id, dut_id, description=description)
    derived = [
        Derived(test=f"t::test_{n}", device=dut_id, name=HEALTH_RECORD, values=v)
        for n, v in enumerate(steps)
    ]
    return DriveResults(ref, derived=derived)


def test_the_report_has_a_health_table_per_drive_and_not_applicable_once(tmp_path: Path) -> None:
    before, after = qemu(), qemu(media_errors=3)
    step = Step("test", before, after, ("media_errors 0 → 3 (rule: unchanged)",), 0.5)
    unreadable = {"step": "health log unreadable", "error": "nvme: exit 1", "broken": []}
    rules = default_profile().as_dict()
    nvme = _drive("nvme0n1", {"health_rules": rules}, [step.as_dict(), unreadable])
    loop = _drive("loop", {"health_log": "a loop device has no health log"}, [])
    drives = (nvme, loop)
    ctx = Context(drives, 2, Palette.of(drives), FigureSink(tmp_path))
    section = health(ctx)
    assert section is not None and section.id == "ssd-health"
    body = section.body
    assert "<b>0 → 3</b>" in body and "media_errors 0 → 3 (rule: unchanged)" in body
    assert "health log unreadable from here on, rules not judged: nvme: exit 1" in body
    assert body.count("not applicable: a loop device has no health log") == 1
    assert "temperature &lt; warning_temperature" in body, "the rules are listed"


def test_a_transition_that_breaks_a_rule_fails_the_test_it_was_reached_for() -> None:
    worse = qemu(media_errors=3)
    reader = _Serving([qemu(), worse, worse, worse])
    watch = HealthWatch(reader, "stand-in", default_profile())
    item: Any = SimpleNamespace(stash=pytest.Stash(), user_properties=[], nodeid="t::test_a")
    around_state(item, watch, "nvme0n1", lambda: "cssd")
    assert after_test(item) == (
        "health in the state transition to cssd: media_errors 0 → 3 (rule: unchanged)"
    )
    steps = [json.loads(text)["values"] for _, text in item.user_properties]
    assert [(s["step"], s["verdict"]) for s in steps] == [
        ("state transition to cssd", "broken"),
        ("test", "kept"),
    ]
    # the next test starts from this one's snapshot after: one read, not two
    item.stash = pytest.Stash()
    around_state(item, watch, "nvme0n1", lambda: None)
    assert len(reader.logs) == 1
    assert after_test(item) is None and reader.logs == []
