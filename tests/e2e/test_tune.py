"""--ssd-tune on the real machine: tuned during the run, exactly as found afterwards.

Every test reads THP, ASLR (and a loop device's scheduler) before and after, and puts
back whatever differs in a finally, so the machine is left as found whatever happens.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.host import RESTORE_FILE
from pytest_ssd.statedir import STATE_DIR_ENV, write_private
from tests.e2e.conftest import attached_loops, detach_loops_under, smoke_argv
from tests.e2e.tuning import Reader, selected

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
ASLR = Path("/proc/sys/kernel/randomize_va_space")
GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def _journal() -> Path:
    """The restore journal: in the machine's state folder (the tests' own), never a report's."""
    return Path(os.environ[STATE_DIR_ENV]) / "tune" / RESTORE_FILE


@pytest.fixture(autouse=True)
def _takes_turns(one_tuner: None) -> None:
    """Every test of this module tunes the machine: each holds the tuners' lock."""


def _settings(run: Any) -> dict[tuple[str, str | None], Any]:
    rows = run.results()["run"]["host_settings"]
    return {(r["key"], r["device"]): r["value"] for r in rows}


def test_smoke_with_tune_is_tuned_and_leaves_everything_as_found(
    run_ssd: Any, as_found: Callable[..., Reader]
) -> None:
    now = as_found(THP, ASLR)
    before = now()
    run = run_ssd("--dut=scratch:1G", "--ssd-tune")
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    assert "pytest-ssd environment" in out
    assert re.search(r"^Transparent huge pages\s+never$", out, re.M), out
    if not GOVERNOR.exists():
        assert re.search(r"^CPU frequency governor\s+not available here \(no cpufreq", out, re.M)
    assert re.search(r"^NVMe APST \(scratch\)\s+not available here \(not an NVMe", out, re.M)
    during = _settings(run)
    assert during[("thp", None)] == "never" and during[("aslr", None)] == "0"
    assert during[("scheduler", "scratch")] == "none"
    changed = run.results()["run"]["tune"]["changed"]
    if selected(before[THP]) != "never":
        assert f"{THP}: {selected(before[THP])} -> never" in changed
        assert f"--ssd-tune restored: {THP}: {selected(before[THP])} again" in out
    assert "not available here" in (run.run_dir / "report.html").read_text()
    assert now() == before, "THP and ASLR exactly as found"
    assert not _journal().exists()


def test_a_loop_devices_scheduler_is_set_and_put_back(
    run_ssd: Any, loop_device: Any, as_found: Callable[..., Reader]
) -> None:
    dev: Path = loop_device(256)
    scheduler = Path(f"/sys/block/{dev.name}/queue/scheduler")
    if "mq-deadline" not in scheduler.read_text():
        pytest.skip(f"{scheduler} offers no mq-deadline to start from")
    now = as_found(THP, ASLR, scheduler)
    scheduler.write_text("mq-deadline")
    before = now()
    assert selected(before[scheduler]) == "mq-deadline"
    run = run_ssd(f"--dut={dev}", f"--ssd-confirm={dev}", "--ssd-tune", "-k", "seq-read")
    assert run.result.ret == 0, run.result.stdout.str()
    assert _settings(run)[("scheduler", dev.name)] == "none", "none while measuring"
    assert now() == before, "the scheduler's selection exactly as found"


FAILING = {
    "fail": "assert False, 'forced failure'",
    "interrupt": "raise KeyboardInterrupt",
}


@pytest.mark.parametrize("how", list(FAILING))
def test_a_failing_or_interrupted_run_restores(
    run_ssd: Any, tmp_path: Path, as_found: Callable[..., Reader], how: str
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_boom.py").write_text(
        "from pathlib import Path\n\n\n"
        "def test_tuned_then_boom() -> None:\n"
        f"    assert '[never]' in Path('{THP}').read_text(), 'tuned during the run'\n"
        f"    assert Path('{ASLR}').read_text().strip() == '0'\n"
        f"    {FAILING[how]}\n"
    )
    now = as_found(THP, ASLR)
    before = now()
    run = run_ssd("--dut=scratch:64M", "--ssd-tune", suite=suite)
    out = run.result.stdout.str()
    assert run.result.ret == (1 if how == "fail" else 2), out
    # line 7 is the forced end: the checks that the run was tuned (lines 5, 6) passed
    assert f"test_boom.py:7: {'AssertionError' if how == 'fail' else 'KeyboardInterrupt'}" in out
    assert now() == before
    assert not _journal().exists()


def test_a_killed_session_is_restored_by_the_next(
    run_ssd: Any, tmp_path: Path, as_found: Callable[..., Reader]
) -> None:
    now = as_found(THP, ASLR)
    before = now()
    reports = tmp_path / "reports"
    argv = smoke_argv(reports, "--dut=scratch:256M", "--ssd-tune")
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(reports.glob("latest/artifacts/*/*/fio.job")):
            assert proc.poll() is None and time.monotonic() < deadline, "no fio started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)  # no finally, no unconfigure: the restore file stays
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    try:
        assert _journal().exists() and not (reports / RESTORE_FILE).exists()
        assert "[never]" in THP.read_text(), "the killed session left THP tuned"
        run = run_ssd("--dut=scratch:64M", "-k", "seq-read")  # the next, without --ssd-tune
        out = run.result.stdout.str()
        assert run.result.ret == 0, out
        assert re.search(
            r"^recovered: .*transparent_hugepage/enabled: \w+ again \(left by pid", out, re.M
        ), out
        assert now() == before
        assert not _journal().exists()
        assert str(reports) not in attached_loops(), "the killed session's scratch is swept too"
    finally:  # a failure before the next session swept it: the killed session's scratch
        detach_loops_under(reports)


def _hostile(victim: Path, existing: Path) -> list[dict[str, Any]]:
    """Journal entries that would make root write a cron job and overwrite a file."""
    cron = {
        "kind": "file",
        "setting": "thp",
        "path": str(victim),
        "original": "* * * * * root sh -c pwned",
        "target": "never",
    }
    return [cron, {**cron, "path": str(existing)}, {**cron, "setting": "cron"}]


def test_a_planted_restore_file_in_the_report_folder_writes_nothing(
    run_ssd: Any, tmp_path: Path
) -> None:
    # the old journal's place: any writable report folder was an arbitrary root write
    victim, existing = tmp_path / "etc" / "cron.d" / "planted", tmp_path / "precious"
    existing.write_text("keep\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    planted = {"pid": 1, "started": "1", "changes": _hostile(victim, existing)}
    (reports / ".ssd-tune-restore.json").write_text(json.dumps(planted))
    run = run_ssd("--dut=scratch:64M", "-k", "seq-read")
    run.result.assert_outcomes(passed=1, deselected=3)
    assert not victim.exists() and not victim.parent.exists()
    assert existing.read_text() == "keep\n"
    out = run.result.stdout.str()
    assert "recovered:" not in out and "refused to restore" not in out, "never read"


def _plant_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: dict[Path, str]
) -> tuple[Path, Path]:
    """A private state folder whose journal holds one good THP entry and hostile ones."""
    state = tmp_path / "state"
    (state / "tune").mkdir(mode=0o700, parents=True)
    state.chmod(0o700)
    victim, existing = tmp_path / "etc" / "cron.d" / "planted", tmp_path / "precious"
    existing.write_text("keep\n")
    # a good entry: put back (as it already is)
    same = {
        "kind": "file",
        "setting": "thp",
        "path": str(THP),
        "target": "never",
        "original": selected(before[THP]),
    }
    journal = {"pid": 1, "started": "1", "changes": [same, *_hostile(victim, existing)]}
    write_private(state / "tune" / RESTORE_FILE, json.dumps(journal))
    monkeypatch.setenv(STATE_DIR_ENV, str(state))
    return victim, existing


def test_recovery_is_reported_also_when_the_session_is_then_refused(
    run_ssd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_found: Callable[..., Reader]
) -> None:
    now = as_found(THP)
    before = now()
    victim, existing = _plant_journal(tmp_path, monkeypatch, before)
    run = run_ssd(f"--dut={tmp_path / 'no-such-disk'}")
    err = run.result.stderr.str()
    assert run.result.ret == 4, err
    assert f"pytest-ssd: recovered: {THP}: {selected(before[THP])} again (left by pid 1)" in err
    refused = [ln for ln in err.splitlines() if ln.startswith("pytest-ssd: refused to restore: ")]
    assert len(refused) == 3, err
    assert "no-such-disk" in err and not victim.exists() and existing.read_text() == "keep\n"
    assert now() == before


def test_a_hostile_journal_in_the_state_folder_is_refused_entry_by_entry(
    run_ssd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_found: Callable[..., Reader]
) -> None:
    now = as_found(THP)
    before = now()
    victim, existing = _plant_journal(tmp_path, monkeypatch, before)
    run = run_ssd("--dut=scratch:64M", "-k", "seq-read")
    out = run.result.stdout.str()
    run.result.assert_outcomes(passed=1, deselected=3)
    assert not victim.exists() and not victim.parent.exists()
    assert existing.read_text() == "keep\n"
    assert f"recovered: {THP}: {selected(before[THP])} again (left by pid 1)" in out, out
    refused = [line for line in out.splitlines() if line.startswith("refused to restore: ")]
    assert refused == [
        f"refused to restore: setting {setting!r}, value '* * * * * root sh -c pwned', at"
        f" {str(p)!r}: not a file --ssd-tune sets for {setting!r} (left by pid 1)"
        for p, setting in ((victim, "thp"), (existing, "thp"), (victim, "cron"))
    ], out
    assert run.results()["run"]["tune"]["refused"] == [r.split(": ", 1)[1] for r in refused]
    assert not (_journal()).exists(), "reported once"
    assert now() == before


@pytest.mark.parametrize("mode", [0o770, 0o777])
def test_a_state_folder_others_may_write_is_refused_in_one_line(
    run_ssd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    state = tmp_path / "state"
    (state / "tune").mkdir(parents=True)
    state.chmod(mode)
    victim = tmp_path / "victim"
    entry = {
        "kind": "file",
        "setting": "thp",
        "path": str(victim),
        "original": "x",
        "target": "never",
    }
    (state / "tune" / RESTORE_FILE).write_text(json.dumps({"pid": 1, "changes": [entry]}))
    monkeypatch.setenv(STATE_DIR_ENV, str(state))
    run = run_ssd("--dut=scratch:64M")
    out = run.result.stdout.str() + run.result.stderr.str()
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert run.result.ret == 4 and errors == [
        "ERROR: this machine: cannot take the tune lock:"
        f" refusing pytest-ssd's state folder {state}: it is writable by others"
        f" (mode {mode:04o}); make it a private folder (chmod 700) or remove it"
    ], out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert not victim.exists()
