"""pytest_ssd.proc.run: what a command leaves in its artifact folder, also when interrupted."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from pytest_ssd.errors import ToolError
from pytest_ssd.proc import run, spawn
from pytest_ssd.proc.runner import may_raise_priority


def test_a_finished_command_keeps_its_output(tmp_path: Path) -> None:
    done = run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10, artifacts=tmp_path)
    assert done.returncode == 3
    assert (tmp_path / "sh.stdout").read_text() == "out\n"
    assert (tmp_path / "sh.stderr").read_text() == "err\n"
    assert (tmp_path / "sh.rc").read_text() == "3\n"


def test_an_interrupted_command_keeps_what_it_printed_and_dies(tmp_path: Path) -> None:
    # Ctrl-C's own handler, also when the tests run in the background (``&`` ignores SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    script = "echo started; echo $$ > {pid}; sleep 60; echo never".format(pid=tmp_path / "pid")
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    begun = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            run(["sh", "-c", script], timeout=60, artifacts=tmp_path / "kept", name="slow")
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - begun < 15, "the interrupt stopped the wait"
    kept = tmp_path / "kept"
    assert (kept / "slow.cmd").read_text().startswith("sh -c")
    assert (kept / "slow.stdout").read_text() == "started\n"
    assert int((kept / "slow.rc").read_text()) < 0, "killed by a signal"
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the whole group is gone, not left sleeping


def test_a_background_program_is_waited_for_to_its_end_and_killed_at_its_timeout(
    tmp_path: Path,
) -> None:
    quick = spawn(["sh", "-c", "sleep 0.2; echo done"], artifacts=tmp_path / "quick", name="q")
    done = quick.wait(timeout=10)
    assert (done.returncode, done.stdout) == (0, "done\n")
    assert (tmp_path / "quick" / "q.rc").read_text() == "0\n"
    slow = spawn(["sleep", "30"], artifacts=tmp_path / "slow", name="slow")
    begun = time.monotonic()
    with pytest.raises(ToolError, match=r"slow timed out after 0.3 s: sleep 30"):
        slow.wait(timeout=0.3)
    assert time.monotonic() - begun < 10
    assert not slow.alive() and int((tmp_path / "slow" / "slow.rc").read_text()) < 0


def test_an_idle_program_and_what_it_started_get_the_normal_policy_back(tmp_path: Path) -> None:
    if not may_raise_priority():
        pytest.skip("needs CAP_SYS_NICE (pytest-ssd then starts batches at normal priority)")
    script = "sleep 30 & echo $! > child; wait"
    idle = spawn(["sh", "-c", script], artifacts=tmp_path, name="idle", idle=True)
    try:
        deadline, pid_file = time.monotonic() + 10, tmp_path / "child"
        while not (pid_file.exists() and pid_file.read_text().endswith("\n")):
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.01)
        child = int(pid_file.read_text())
        assert idle.children() == [child]
        assert [os.sched_getscheduler(p) for p in (idle.proc.pid, child)] == [os.SCHED_IDLE] * 2
        idle.normal_policy()
        assert [os.sched_getscheduler(p) for p in (idle.proc.pid, child)] == [os.SCHED_OTHER] * 2
    finally:
        idle.kill()
