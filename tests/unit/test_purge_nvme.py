"""NVMe sanitize and format through a fake runner; the guard and read-back run for real.

The namespace is a sparse file (reads as zeroes, as QEMU's namespace does after
``format --ses=1`` with DLFEAT 1), so the read-back check has real data to judge.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_ssd.errors import ParseError, PurgeError, SafetyError
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.purge import PurgeMethod, PurgeResult, execute, parse_sanitize_log, purge
from pytest_ssd.purge.sanitize import START_GRACE_S, SanitizeState
from tests.unit.purge_fakes import (
    NVME_GOLDEN,
    OK,
    FakeClock,
    FakeRunner,
    fake_tools,
    golden_failure,
    nvme_identity,
    nvme_info,
    sanitize_log,
    sparse_target,
)

SANITIZE_CAPABLE = {"sanicap": 0b111}
POLL_S = 5.0


def _purge(
    tmp_path: Path,
    method: PurgeMethod,
    runner: FakeRunner,
    *,
    ctrl: dict[str, int] | None = None,
    ns: dict[str, int] | None = None,
    fill: bytes | None = None,
    clock: FakeClock | None = None,
    timeout_s: float = 3600.0,
) -> PurgeResult:
    target = sparse_target(tmp_path, fill=fill)
    identity = nvme_identity(target, size_bytes=target.stat().st_size, nvme=nvme_info(ctrl, ns))
    return purge(
        identity,
        method,
        artifacts=tmp_path / "artifacts",
        poll_interval_s=POLL_S,
        timeout_s=timeout_s,
        tools=fake_tools(runner, clock),
        machine=LOCAL,
    )


def test_sanitize_log_layout_of_nvme_cli() -> None:
    log = parse_sanitize_log(sanitize_log(2, sprog=16384, sanact=4, erased=0))
    assert log.state == SanitizeState.IN_PROGRESS
    assert log.status == "(2) Sanitize in Progress."
    assert (log.sprog, log.percent, log.sanact, log.global_erased) == (16384, 25.0, 4, False)
    assert not log.completed
    done = parse_sanitize_log(sanitize_log(4))
    assert done.completed and done.percent == 100.0 and done.global_erased


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NVMe status: ...", "not JSON"),
        ('{"nvme0": {"sstat": {}}}', "'sprog'"),
        ('{"nvme0": {"sprog": 65535}}', "'sstat' is missing"),
        ('{"nvme0": {"sprog": 65535, "sstat": {"status": "done"}}}', "'(N) text'"),
        ('{"nvme0": {"sprog": "x", "sstat": {"status": "(1) ok"}}}', "'sprog' is not an integer"),
    ],
)
def test_sanitize_log_errors_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_sanitize_log(text)


def test_sanitize_block_polls_until_completed(tmp_path: Path) -> None:
    runner = FakeRunner(
        {
            "sanitize": [OK],
            "sanitize-log": [
                (0, sanitize_log(2, sprog=0), ""),
                (0, sanitize_log(2, sprog=32768), ""),
                (0, sanitize_log(1), ""),
            ],
        }
    )
    clock = FakeClock()
    result = _purge(
        tmp_path, PurgeMethod.SANITIZE_BLOCK, runner, ctrl=SANITIZE_CAPABLE, clock=clock
    )
    assert runner.calls[0] == ["nvme", "sanitize", "/dev/nvme0", "--sanact=2"]
    assert runner.calls[1:] == [["nvme", "sanitize-log", "/dev/nvme0", "-o", "json"]] * 3
    assert clock.sleeps == [POLL_S, POLL_S]
    assert result.method is PurgeMethod.SANITIZE_BLOCK
    assert result.seconds == 2 * POLL_S
    assert result.weaker is None
    assert result.commands == (
        "nvme sanitize /dev/nvme0 --sanact=2",
        "nvme sanitize-log /dev/nvme0 -o json",
    )
    check = result.verification
    assert (check.promise, check.ok, check.sampled, check.matching) == ("zeroes", True, 66, 66)
    assert "DLFEAT bits 2:0 = 1" in check.detail


@pytest.mark.parametrize(
    ("method", "argv_tail"),
    [
        (PurgeMethod.SANITIZE_CRYPTO, ["--sanact=4"]),
        (PurgeMethod.SANITIZE_OVERWRITE, ["--sanact=3", "--owpass=1"]),
    ],
)
def test_sanitize_actions(tmp_path: Path, method: PurgeMethod, argv_tail: list[str]) -> None:
    sanact = int(argv_tail[0].removeprefix("--sanact="))
    runner = FakeRunner(
        {"sanitize": [OK], "sanitize-log": [(0, sanitize_log(4, sanact=sanact), "")]}
    )
    _purge(tmp_path, method, runner, ctrl=SANITIZE_CAPABLE)
    assert runner.calls[0] == ["nvme", "sanitize", "/dev/nvme0", *argv_tail]


def test_sanitize_that_fails_in_the_drive(tmp_path: Path) -> None:
    runner = FakeRunner(
        {
            "sanitize": [OK],
            "sanitize-log": [(0, sanitize_log(2, sprog=100), ""), (0, sanitize_log(3), "")],
        }
    )
    with pytest.raises(PurgeError) as info:
        _purge(tmp_path, PurgeMethod.SANITIZE_BLOCK, runner, ctrl=SANITIZE_CAPABLE)
    message = str(info.value)
    assert "\n" not in message
    assert "sanitize of /dev/nvme0 failed" in message
    assert "(3) Most Recent Sanitize Command Failed." in message
    assert "'nvme sanitize /dev/nvme0 --sanact=1'" in message


def test_golden_sanitize_failure_is_one_line_with_the_nvme_status(tmp_path: Path) -> None:
    runner = FakeRunner({"sanitize": [golden_failure("sanitize.failed.txt")]})
    with pytest.raises(PurgeError) as info:
        _purge(tmp_path, PurgeMethod.SANITIZE_BLOCK, runner, ctrl=SANITIZE_CAPABLE)
    assert str(info.value) == (
        "nvme sanitize /dev/nvme0 --sanact=2 failed (exit 1): NVMe status: Invalid Command "
        "Opcode: A reserved coded value or an unsupported value in the command opcode "
        "field(0x4001)"
    )
    assert len(runner.calls) == 1  # no sanitize-log poll after a refused sanitize


def test_golden_sanitize_log_failure(tmp_path: Path) -> None:
    runner = FakeRunner(
        {"sanitize": [OK], "sanitize-log": [golden_failure("sanitize-log.failed.txt")]}
    )
    expected = r"^nvme sanitize-log /dev/nvme0 -o json failed \(exit 1\): NVMe status: Invalid "
    with pytest.raises(PurgeError, match=expected + r"Field in Command: .*\(0x4002\)$"):
        _purge(tmp_path, PurgeMethod.SANITIZE_BLOCK, runner, ctrl=SANITIZE_CAPABLE)


def test_an_older_sanitize_in_the_log_is_not_taken_for_ours(tmp_path: Path) -> None:
    runner = FakeRunner(
        {
            "sanitize": [OK],
            "sanitize-log": [
                (0, sanitize_log(1, sanact=4), ""),  # a crypto erase of last week
                (0, sanitize_log(2, sprog=50000), ""),
                (0, sanitize_log(1), ""),
            ],
        }
    )
    _purge(tmp_path, PurgeMethod.SANITIZE_BLOCK, runner, ctrl=SANITIZE_CAPABLE)
    assert runner.counts["sanitize-log"] == 3


def test_sanitize_that_never_starts(tmp_path: Path) -> None:
    runner = FakeRunner({"sanitize": [OK], "sanitize-log": [(0, sanitize_log(0), "")]})
    clock = FakeClock()
    with pytest.raises(PurgeError, match="accepted but after 60 s the sanitize log still says "):
        _purge(tmp_path, PurgeMethod.SANITIZE_BLOCK, runner, ctrl=SANITIZE_CAPABLE, clock=clock)
    assert clock.now == START_GRACE_S


def test_sanitize_still_running_at_the_timeout(tmp_path: Path) -> None:
    runner = FakeRunner({"sanitize": [OK], "sanitize-log": [(0, sanitize_log(2, sprog=16384), "")]})
    clock = FakeClock()
    with pytest.raises(PurgeError) as info:
        _purge(
            tmp_path,
            PurgeMethod.SANITIZE_BLOCK,
            runner,
            ctrl=SANITIZE_CAPABLE,
            clock=clock,
            timeout_s=600.0,
        )
    assert str(info.value) == (
        "sanitize of /dev/nvme0 still in progress after 600 s (25.0% done); "
        "it goes on in the drive: watch 'nvme sanitize-log /dev/nvme0'"
    )
    assert runner.counts["sanitize-log"] == 600 / POLL_S + 1


def test_sanitize_not_in_sanicap_is_refused_before_any_command(tmp_path: Path) -> None:
    runner = FakeRunner({})
    with pytest.raises(PurgeError, match=r"cannot purge .* by sanitize-block: SANICAP bit 1 clear"):
        _purge(tmp_path, PurgeMethod.SANITIZE_BLOCK, runner)
    assert runner.calls == []


def test_format_ses1_keeps_the_lba_format_and_skips_the_wait(tmp_path: Path) -> None:
    runner = FakeRunner({"format": [(0, (NVME_GOLDEN / "format.txt").read_text(), "")]})
    result = _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner, timeout_s=900.0)
    (argv,) = runner.calls
    assert argv[:2] == ["nvme", "format"]
    assert argv[2].endswith("namespace.img")
    assert argv[3:] == ["--ses=1", "--force", "--timeout=900000"]
    assert not any(a.startswith(("--lbaf", "-l", "--block-size")) for a in argv)
    assert runner.timeouts["format"] > 900.0
    assert result.verification.ok is True


def test_format_ses2(tmp_path: Path) -> None:
    runner = FakeRunner({"format": [(0, (NVME_GOLDEN / "format.txt").read_text(), "")]})
    _purge(tmp_path, PurgeMethod.FORMAT_SES2, runner, ctrl={"fna": 0b100})
    assert "--ses=2" in runner.calls[0]


def test_format_failure_carries_the_nvme_status(tmp_path: Path) -> None:
    runner = FakeRunner({"format": [golden_failure("sanitize.failed.txt")]})
    with pytest.raises(PurgeError) as info:
        _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("format-ses1 of ")
    assert "nvme format " in message and "--ses=1" in message
    status = (NVME_GOLDEN / "sanitize.failed.txt").read_text().splitlines()[-1]
    assert message.endswith(f"failed (exit 1): {status}")
    assert status.startswith("NVMe status: Invalid Command Opcode")


def test_read_back_that_breaks_the_dlfeat_promise_fails_the_purge(tmp_path: Path) -> None:
    runner = FakeRunner({"format": [OK]})
    with pytest.raises(PurgeError) as info:
        _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner, fill=b"\xab")
    message = str(info.value)
    assert "failed its read-back check: 66 of 66 sampled blocks of 512 B" in message
    assert "do not read back as zeroes (first: block 0)" in message


def test_dlfeat_ones(tmp_path: Path) -> None:
    runner = FakeRunner({"format": [OK]})
    result = _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner, ns={"dlfeat": 2}, fill=b"\xff")
    check = result.verification
    assert (check.promise, check.ok) == ("0xFF bytes", True)
    with pytest.raises(PurgeError, match="do not read back as 0xFF bytes"):
        _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner, ns={"dlfeat": 2})


def test_no_dlfeat_promise_is_not_checked(tmp_path: Path) -> None:
    runner = FakeRunner({"format": [OK]})
    result = _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner, ns={"dlfeat": 0}, fill=b"\xab")
    check = result.verification
    assert (check.promise, check.ok, check.sampled) == (None, None, 0)
    assert check.detail.startswith("not checked: id-ns DLFEAT bits 2:0 = 0")


def test_guard_runs_before_any_command(tmp_path: Path) -> None:
    runner = FakeRunner({"format": [OK]})
    identity = nvme_identity(tmp_path / "missing")
    with pytest.raises(SafetyError, match="does not exist"):
        purge(
            identity,
            PurgeMethod.FORMAT_SES1,
            artifacts=tmp_path,
            tools=fake_tools(runner),
            machine=LOCAL,
        )
    assert runner.calls == []


@pytest.fixture
def sibling_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """/sys/block with nvme0n1 (the target), two more namespaces of nvme0, and nvme1n1."""
    root = tmp_path / "sys-block"
    for name in ("nvme0n1", "nvme0n2", "nvme0n10", "nvme1n1", "loop0"):
        (root / name).mkdir(parents=True)
    monkeypatch.setattr(execute, "SYS_BLOCK", root)
    return root


def test_sibling_namespaces(sibling_sysfs: Path) -> None:
    assert execute.sibling_namespaces(nvme_identity(), LOCAL) == ["/dev/nvme0n10", "/dev/nvme0n2"]
    assert execute.sibling_namespaces(nvme_identity(kernel_name="nvme1n1"), LOCAL) == []


def test_sanitize_guards_every_namespace_of_the_controller(
    tmp_path: Path, sibling_sysfs: Path
) -> None:
    runner = FakeRunner({"sanitize": [OK], "sanitize-log": [(0, sanitize_log(1), "")]})
    with pytest.raises(SafetyError) as info:
        _purge(tmp_path, PurgeMethod.SANITIZE_BLOCK, runner, ctrl=SANITIZE_CAPABLE)
    assert str(info.value).startswith(
        "sanitize-block of "
        f"{tmp_path / 'namespace.img'} erases every namespace of /dev/nvme0: "
        "refusing to write to /dev/nvme0n10: "
    )
    assert runner.calls == []


@pytest.mark.parametrize(("fna", "refused"), [(0b000, False), (0b001, True), (0b010, True)])
def test_format_guards_other_namespaces_only_when_fna_says_it_reaches_them(
    tmp_path: Path, sibling_sysfs: Path, fna: int, refused: bool
) -> None:
    runner = FakeRunner({"format": [OK]})
    if refused:
        with pytest.raises(SafetyError, match="erases every namespace of /dev/nvme0"):
            _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner, ctrl={"fna": fna})
        assert runner.calls == []
    else:
        _purge(tmp_path, PurgeMethod.FORMAT_SES1, runner, ctrl={"fna": fna})
        assert [call[1] for call in runner.calls] == ["format"]
