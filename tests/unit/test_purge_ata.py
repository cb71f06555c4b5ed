"""ATA security state from real ``hdparm -I`` output, and ATA secure erase through a fake runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.errors import PurgeError, ToolError
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.purge import (
    AtaSecurity,
    PurgeMethod,
    PurgeResult,
    parse_hdparm_identify,
    purge,
    query_ata,
)
from pytest_ssd.purge.execute import ATA_PASSWORD
from tests.unit.purge_fakes import (
    FROZEN,
    NOT_FROZEN,
    OK,
    FakeRunner,
    fake_tools,
    sata_identity,
    sparse_target,
)


def test_frozen_intel_ssd() -> None:
    state = parse_hdparm_identify(FROZEN.read_text())
    assert state == AtaSecurity(
        supported=True,
        enabled=False,
        locked=False,
        frozen=True,
        expired=False,
        enhanced_erase_supported=True,
        erase_minutes=2,
        enhanced_erase_minutes=2,
        level=None,
    )
    reason = state.blocker(enhanced=True)
    assert reason is not None and reason.startswith("ATA security is frozen: suspend and resume")
    assert "'rtcwake -m mem -s 10'" in reason and "hot-plug the drive's power" in reason


def test_not_frozen_sandisk_ssd() -> None:
    state = parse_hdparm_identify(NOT_FROZEN.read_text())
    assert (state.supported, state.frozen, state.locked, state.enabled) == (
        True,
        False,
        False,
        False,
    )
    assert state.enhanced_erase_supported
    assert (state.minutes(enhanced=False), state.minutes(enhanced=True)) == (2, 2)
    assert state.blocker(enhanced=True) is None and state.blocker(enhanced=False) is None


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def test_password_set_locked_and_no_enhanced_erase() -> None:
    text = _edit(NOT_FROZEN.read_text(), "\tnot\tenabled\n", "\t\tenabled\n")
    text = _edit(text, "\t\tsupported: enhanced erase\n", "\tnot\tsupported: enhanced erase\n")
    times = "\t2min for SECURITY ERASE UNIT. 2min for ENHANCED SECURITY ERASE UNIT."
    text = _edit(text, times, "\tSecurity level high\n\t4min for SECURITY ERASE UNIT.")
    state = parse_hdparm_identify(text)
    assert (state.enabled, state.enhanced_erase_supported, state.level) == (True, False, "high")
    assert (state.erase_minutes, state.enhanced_erase_minutes) == (4, None)
    assert state.blocker(enhanced=True) == "the drive does not support enhanced security erase"
    assert "a user password is already set" in str(state.blocker(enhanced=False))
    locked = parse_hdparm_identify(_edit(text, "\tnot\tlocked\n", "\t\tlocked\n"))
    assert "locked: unlock the drive" in str(locked.blocker(enhanced=False))


def test_no_security_section_means_unsupported() -> None:
    text = NOT_FROZEN.read_text()
    start = text.index("Security:")
    end = text.index("Logical Unit WWN")
    state = parse_hdparm_identify(text[:start] + text[end:])
    assert state == AtaSecurity(supported=False)
    assert (
        state.blocker(enhanced=False) == "the drive does not support the ATA Security feature set"
    )


def test_query_runs_hdparm_and_reports_its_failure() -> None:
    runner = FakeRunner({"-I": [(0, NOT_FROZEN.read_text(), "")]})
    assert query_ata("/dev/sda", fake_tools(runner)).enhanced_erase_supported
    assert runner.calls == [["hdparm", "-I", "/dev/sda"]]
    failing = FakeRunner({"-I": [(2, "", "/dev/sda: No such device\n")]})
    with pytest.raises(ToolError, match=r"hdparm -I /dev/sda failed \(exit 2\): /dev/sda: No such"):
        query_ata("/dev/sda", fake_tools(failing))


def _sata_purge(tmp_path: Path, runner: FakeRunner, method: PurgeMethod) -> PurgeResult:
    target = sparse_target(tmp_path)
    identity = sata_identity(target, size_bytes=target.stat().st_size)
    return purge(
        identity,
        method,
        artifacts=tmp_path / "artifacts",
        timeout_s=60.0,
        tools=fake_tools(runner),
        machine=LOCAL,
    )


def test_enhanced_secure_erase(tmp_path: Path) -> None:
    runner = FakeRunner(
        {
            "-I": [(0, NOT_FROZEN.read_text(), "")],
            "--security-set-pass": [OK],
            "--security-erase-enhanced": [OK],
        }
    )
    result = _sata_purge(tmp_path, runner, PurgeMethod.ATA_SECURE_ERASE_ENHANCED)
    target = str(tmp_path / "namespace.img")
    assert runner.calls == [
        ["hdparm", "-I", target],
        ["hdparm", "--user-master", "u", "--security-set-pass", ATA_PASSWORD, target],
        ["hdparm", "--user-master", "u", "--security-erase-enhanced", ATA_PASSWORD, target],
    ]
    # the drive estimates 2 min: the erase may take twice that plus 5 min, not just 60 s
    assert runner.timeouts["--security-erase-enhanced"] == 2 * 2 * 60 + 300
    assert result.verification.ok is None
    assert result.weaker is None


def test_frozen_drive_is_refused_before_a_password_is_set(tmp_path: Path) -> None:
    runner = FakeRunner({"-I": [(0, FROZEN.read_text(), "")]})
    with pytest.raises(PurgeError) as info:
        _sata_purge(tmp_path, runner, PurgeMethod.ATA_SECURE_ERASE)
    message = str(info.value)
    assert "\n" not in message
    assert "by ata-secure-erase: ATA security is frozen" in message
    assert "rtcwake -m mem -s 10" in message
    assert [call[1] for call in runner.calls] == ["-I"]


def test_failed_erase_removes_the_password_again(tmp_path: Path) -> None:
    error = "fake hdparm: erase refused\n"  # a stand-in: the message is passed on as it is
    runner = FakeRunner(
        {
            "-I": [(0, NOT_FROZEN.read_text(), "")],
            "--security-set-pass": [OK],
            "--security-erase": [(5, "", error)],
            "--security-disable": [OK],
        }
    )
    with pytest.raises(PurgeError) as info:
        _sata_purge(tmp_path, runner, PurgeMethod.ATA_SECURE_ERASE)
    message = str(info.value)
    assert "\n" not in message
    assert "hdparm --user-master u --security-erase pytest-ssd" in message
    assert "failed (exit 5): fake hdparm: erase refused;" in message
    assert message.endswith(f"the temporary user password {ATA_PASSWORD!r} was removed again")
    assert runner.calls[-1][3] == "--security-disable"
