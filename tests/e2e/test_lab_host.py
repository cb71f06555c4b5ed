"""A lab's test host: a dozen drives behind one sshd with its default ``MaxSessions`` (10).

Every drive of a host goes through the session's one master connection: the
locks and claims of all of them are held by one process on one channel, the
channels a session opens at once stay under sshd's limit, and ssh never logs in
a second time on its own (a channel refused fails loudly instead).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import smoke_argv
from tests.e2e.test_safety_hosts import wrapped_host
from tests.sshd import Sshd, local_sshd

LoopFactory = Callable[..., Path]
DRIVES = 12
#: sshd's own default
MAX_SESSIONS = 10

SHORT_READ = """
from pytest_ssd.fio.job import FioJob


def test_a_short_read(ssd):
    job = FioJob("read", "rnd", 4096, size=1 << 20, runtime_s=0.2)
    assert ssd.run(job).directions["read"].io_bytes > 0
"""

#: every worker reads its drive, then asks the host for many short commands at once
BUSY_WORKERS = (
    SHORT_READ
    + """

from concurrent.futures import ThreadPoolExecutor


def test_many_short_commands_at_once(ssd):
    def short(_):
        return ssd.machine.run(["sleep", "0.3"], timeout=120).returncode
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(short, range(16))) == [0] * 16
"""
)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Sshd]:
    with local_sshd(tmp_path / "sshd", max_sessions=MAX_SESSIONS) as server:
        yield server


def _suite(folder: Path, tests: str = SHORT_READ) -> Path:
    folder.mkdir()
    (folder / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (folder / "test_read.py").write_text(tests)
    return folder


def _clean(out: str) -> None:
    assert "INTERNALERROR" not in out and "Traceback" not in out, out


def _second(argv: list[str], last: Path, log: Path, out: Path) -> str:
    """A test of the run: a second session on the run's last drive, while the run holds it."""
    return SECOND.format(argv=argv, last=str(last), log=str(log), out=str(out))


#: counts the logins so far, then starts the second session (its own login) and keeps its say
SECOND = """
import json, os, subprocess
from pathlib import Path

from pytest_ssd.device.node import flock_holders


def test_a_second_session_meanwhile():
    logins = Path({log!r}).read_text().count("Accepted publickey")
    st = os.stat({last!r})
    locks = Path("/proc/locks").read_text().splitlines()
    pids = flock_holders(locks, st.st_dev, st.st_ino)
    holders = {{p: Path(f"/proc/{{p}}/cmdline").read_text() for p in pids}}
    done = subprocess.run({argv!r}, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    said = {{"logins": logins, "ret": done.returncode, "out": out, "holders": holders}}
    Path({out!r}).write_text(json.dumps(said))
"""


def test_a_dozen_drives_of_a_host_take_one_login(
    lab: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    devs = [loop_device(64) for _ in range(DRIVES)]
    config = f"--ssd-ssh-config={lab.config}"
    args = [f"--dut={lab.url(str(d))}" for d in devs] + [f"--ssd-confirm={d}" for d in devs]
    suite = _suite(tmp_path / "suite")
    last = devs[-1]
    second = smoke_argv(tmp_path / "second", f"--dut={lab.url(str(last))}", config)
    said = tmp_path / "second.json"
    (suite / "test_zz_second.py").write_text(_second(second, last, lab.folder / "sshd.log", said))
    run = run_ssd(*args, config, suite=suite, timeout=600)
    out = run.result.stdout.str()
    _clean(out)
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=DRIVES + 1)
    assert len(run.results()["measurements"]) == DRIVES
    found = json.loads(said.read_text())
    assert found["logins"] == 1, "the run's twelve drives went through one login"
    assert lab.logins() == 2, "the run's and the second session's, nothing more"
    _clean(found["out"])
    assert found["ret"] == 4, found["out"]
    refusal = [line for line in found["out"].splitlines() if "it is locked by pid" in line]
    assert len(refusal) == 1, found["out"]
    ((pid, title),) = found["holders"].items()  # the host is this machine: its /proc/locks
    assert sorted(title.split("\0")[0].split()[2:]) == sorted(map(str, devs)), "one holds all"
    assert re.search(rf"it is locked by pid {pid} \(pytest-ssd lock /dev/loop\d+ ", refusal[0])
    assert "no more sessions" not in (lab.folder / "sshd.log").read_text(), "none refused"


#: a host slow to answer: each guard snapshot waits a second; the wrapper logs when they run
SLOW_SNAPSHOTS = """
case "$SSH_ORIGINAL_COMMAND" in
  *mountinfo*)
    echo start >> {log}; sleep 1; /bin/sh -c "$SSH_ORIGINAL_COMMAND"; rc=$?
    echo end >> {log}; exit $rc ;;
esac
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


#: logs each guard snapshot of the host (with the session's lock holder at that moment) and
#: each copy of devices' sysfs (identities, summaries)
COUNTED = """
case "$SSH_ORIGINAL_COMMAND" in
  *mountinfo*) {{ echo guard; pgrep -af '^pytest-ssd lock'; }} >> {log} ;;
  *'readlink -e "/sys/class/block/'*) echo sysfs >> {log} ;;
esac
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""

#: the log as it was when the first test started
FIRST = """
import shutil


def test_0_first():
    shutil.copy({log!r}, {copy!r})
"""


def test_a_hosts_drives_are_looked_at_once_before_their_locks_and_once_after(
    loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    """Four drives of a host: two guard snapshots and three sysfs copies before the first test
    (one look before the locks, one after them, one for the summaries), not three and
    three for each drive; the second guard snapshot sees every drive locked."""
    devs = [loop_device(64) for _ in range(4)]
    log, copy = tmp_path / "looks.log", tmp_path / "at-start.log"
    suite = _suite(tmp_path / "s")
    (suite / "test_0.py").write_text(FIRST.format(log=str(log), copy=str(copy)))
    with wrapped_host(tmp_path / "counted", COUNTED.format(log=log)) as server:
        args = [f"--dut={server.url(str(d))}" for d in devs] + [f"--ssd-confirm={d}" for d in devs]
        run = run_ssd(*args, f"--ssd-ssh-config={server.config}", suite=suite)
        assert server.logins() == 1
    out = run.result.stdout.str()
    _clean(out)
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=len(devs) + 1)
    lines = copy.read_text().splitlines()
    assert lines.count("sysfs") == 3, lines
    looks = "\n".join(line for line in lines if line != "sysfs").split("guard")[1:]
    assert len(looks) == 2, lines

    def locked(look: str) -> set[str]:
        return {d for line in look.splitlines() for d in map(str, devs) if d in line.split()}

    assert locked(looks[0]) == set(), "the first look is before the locks"
    assert locked(looks[1]) == set(map(str, devs)), "the guard's look is after all of them"


def test_of_drives_refused_at_once_the_first_named_is_told(
    loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    dev = loop_device(64)
    missing = f"/dev/ssd-missing-{os.getpid()}"
    log = tmp_path / "snapshots.log"
    with wrapped_host(tmp_path / "slow", SLOW_SNAPSHOTS.format(log=log)) as server:
        # the second is refused after the third (a second's snapshot, then its lock's turn)
        urls = [server.url(str(dev)), server.url(str(dev)), server.url(missing)]
        config = f"--ssd-ssh-config={server.config}"
        run = run_ssd(*[f"--dut={u}" for u in urls], config, "--ssd-readonly")
    out = run.result.stdout.str() + run.result.stderr.str()
    _clean(out)
    assert run.result.ret == 4, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert errors == [
        f"ERROR: refusing --dut={urls[1]}: it is the same device as --dut={urls[0]}"
        f" ({dev} on ssh root@127.0.0.1 port {server.port}); name each device once"
    ], out


WORKERS = 4


def test_workers_share_the_controllers_one_login(
    lab: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    """-n 4: every worker multiplexes over the controller's master (one login), its fio server
    on the host's agent, and all of them together keep the channel budget (none refused)."""
    devs = [loop_device(64) for _ in range(WORKERS)]
    args = [f"--dut={lab.url(str(d))}" for d in devs] + [f"--ssd-confirm={d}" for d in devs]
    suite = _suite(tmp_path / "suite", BUSY_WORKERS)
    run = run_ssd(*args, f"--ssd-ssh-config={lab.config}", f"-n{WORKERS}", suite=suite)
    out = run.result.stdout.str()
    _clean(out)
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=2 * WORKERS)
    assert len(run.results()["measurements"]) == WORKERS
    log = (lab.folder / "sshd.log").read_text()
    assert lab.logins() == 1, "the workers logged in on their own"
    assert "no more sessions" not in log, "sshd refused a channel"
