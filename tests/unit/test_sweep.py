"""A session's mark and its sweep (pytest_ssd.proc.sweep), on real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from pytest_ssd.proc.sweep import MARK_ENV, marked, new_token, sweep


def _sleeper(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)


def test_a_sweep_ends_marked_processes_a_stopped_one_at_once_and_nothing_else() -> None:
    token = new_token()
    ours = _sleeper({**os.environ, MARK_ENV: token})
    stopped = _sleeper({**os.environ, MARK_ENV: token})
    other = _sleeper({**os.environ, MARK_ENV: token + "x"})  # another session's
    try:
        os.kill(stopped.pid, signal.SIGSTOP)
        assert sorted(marked(token)) == sorted([ours.pid, stopped.pid])
        started = time.monotonic()
        found = sweep(token)
        assert time.monotonic() - started < 3, "SIGTERM ends one, SIGKILL the stopped one"
        assert found == sorted([(ours.pid, "sleep"), (stopped.pid, "sleep")])
        assert ours.wait(timeout=10) == -signal.SIGTERM
        assert stopped.wait(timeout=10) == -signal.SIGKILL
        assert other.poll() is None and marked(token) == []
    finally:
        for proc in (ours, stopped, other):
            proc.kill()
            proc.wait()
