"""pytest-ssd runs on devices in a test host: --dut=ssh://root@127.0.0.1:PORT/dev/loopN.

A real sshd on 127.0.0.1 (tests/sshd.py) reaches this machine's loop devices as
a test host's: identification, the guard and the lock go over SSH, fio runs
there through its own server (``fio --client``), and nothing is left running.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.conftest import cssd_suite, digest
from tests.sshd import Sshd, local_sshd

LoopFactory = Callable[..., Path]


def _suite_on_host(run_ssd: Any, server: Sshd, dev: Path, tmp_path: Path, tests: str) -> Any:
    """A one-file suite of *tests* run on *dev* reached through *server*."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("pytest_ssd_suite = True\n")
    (suite / "test_it.py").write_text(tests)
    config = f"--ssd-ssh-config={server.config}"
    return run_ssd(f"--dut={server.url(str(dev))}", f"--ssd-confirm={dev}", config, suite=suite)


def test_smoke_runs_on_a_test_host(server: Sshd, loop_device: LoopFactory, run_ssd: Any) -> None:
    dev = loop_device(1024)
    run = run_ssd(
        f"--dut={server.url(str(dev))}", f"--ssd-confirm={dev}", f"--ssd-ssh-config={server.config}"
    )
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=4)
    dut_id = server.device_id(dev)  # the host and the device, as every test id names it
    assert f"{dut_id}: {dev}" in out and f"on root@127.0.0.1 port {server.port}" in out
    commands = [p.read_text() for p in run.run_dir.rglob("fio.cmd")]
    assert len(commands) == 4
    assert all("--client=sock:fio.sock" in c for c in commands), "every fio ran on the host"
    results = run.results()
    device = results["devices"][dut_id]
    assert device["host"] == f"127.0.0.1:{server.port}"
    assert device["label"].endswith(f" on 127.0.0.1:{server.port}")
    assert device["identity"]["path"] == str(dev) and device["identity"]["kernel_name"] == dev.name
    assert len(results["measurements"]) == 4
    assert all(f"[{dut_id}" in m["test"] for m in results["measurements"]), "the test ids"
    # what the host's CPUs did while fio ran there, read on the host (/proc/stat, PSI)
    cpus = [m["workload"]["host_cpus"] for m in results["measurements"]]
    assert all(c["busy"] > 0 and c["fio"] > 0 and 0 <= c["waiting"] <= 1 for c in cpus), cpus
    # the settings the device ran under are the host's (and only the host's: nothing here)
    label = f"127.0.0.1:{server.port}"
    readings = {r["key"]: r for r in results["run"]["host_settings"]}
    assert {r["host"] for r in results["run"]["host_settings"]} == {label}
    assert readings["scheduler"]["device"] == dut_id
    assert (
        readings["scheduler"]["source"] == f"/sys/class/block/{dev.name}/queue/scheduler on {label}"
    )
    assert readings["memory"]["value"].endswith("available")
    with sqlite3.connect(run.report_dir / "results.sqlite") as db:
        (host, described) = db.execute("SELECT host, description FROM run_devices").fetchone()
    assert host == json.loads(described)["host"] == f"127.0.0.1:{server.port}"
    assert server.settled() == [], "no fio server, agent or folder is left on the host"


def test_two_devices_on_a_host_run_in_parallel(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any
) -> None:
    first, second = loop_device(1024), loop_device(1024)
    run = run_ssd(
        f"--dut={server.url(str(first))}",
        f"--dut={server.url(str(second))}",
        f"--ssd-confirm={first}",
        f"--ssd-confirm={second}",
        f"--ssd-ssh-config={server.config}",
        "-n",
        "2",
    )
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=8)
    measured = {m["device"] for m in run.results()["measurements"]}
    assert measured == {server.device_id(first), server.device_id(second)}
    logs = [p.read_text() for p in (run.run_dir / "artifacts").rglob("fio-server.stdout")]
    assert logs == [], "the servers' folders are the connections', removed at the end"


def test_an_unreachable_host_stops_the_run_before_anything(
    tmp_path: Path, loop_device: LoopFactory, run_ssd: Any
) -> None:
    dev = loop_device(64)
    before = digest(dev)
    with local_sshd(tmp_path / "gone") as gone:
        url, config = gone.url(str(dev)), gone.config
    run = run_ssd(f"--dut={url}", f"--ssd-confirm={dev}", f"--ssd-ssh-config={config}")
    assert run.result.ret != 0
    errors = [line for line in run.result.stderr.lines if "Connection refused" in line]
    assert len(errors) == 1 and errors[0].startswith("ERROR: ssh root@127.0.0.1 port "), (
        run.result.stderr.str()
    )
    assert "Traceback" not in run.result.stderr.str() + run.result.stdout.str()
    assert not run.report_dir.exists() or not any(run.report_dir.glob("2*")), "no run folder"
    assert digest(dev) == before


def test_a_mounted_device_on_a_host_is_refused(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    dev = loop_device(64)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(dev)], check=True, timeout=60)
    point = tmp_path / "mnt"
    point.mkdir()
    subprocess.run(["mount", "-o", "ro", str(dev), str(point)], check=True, timeout=60)
    try:
        before = digest(dev)
        run = run_ssd(
            f"--dut={server.url(str(dev))}",
            f"--ssd-confirm={dev}",
            f"--ssd-ssh-config={server.config}",
        )
        err = run.result.stderr.str()
        assert run.result.ret != 0
        where = f"ssh root@127.0.0.1 port {server.port}"
        assert f"refusing to write to {dev} on {where}: it is mounted at {point}" in err, err
        assert digest(dev) == before
    finally:
        subprocess.run(["umount", str(point)], check=False, timeout=60)


def test_a_device_state_is_reached_on_the_host(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    dev = loop_device(2048, "cssd.img")
    backing = next(tmp_path.glob("*-cssd.img"))
    suite = cssd_suite(tmp_path)
    run = run_ssd(
        f"--dut={server.url(str(dev))}",
        f"--ssd-confirm={dev}",
        f"--ssd-ssh-config={server.config}",
        suite=suite,
    )
    assert run.result.ret == 0, run.result.stdout.str()
    (transition,) = run.results()["transitions"]
    steps = [s for s in transition["steps"] if s["kind"] != "idle"]
    assert [s["kind"] for s in steps] == ["purge", "fio", "fio", "discard"]
    assert "discard" in steps[0]["detail"] and "read back as zeroes" in steps[0]["detail"]
    totals = transition["totals"]
    method = 2 * (2 << 30) + (256 << 20)  # 200 % SEQ + the RND region
    assert method <= totals["written"] <= 1.05 * method, "the host's kernel counters"
    # fio's own figure: its final report, not the first status report (fio --client lists
    # each step's status reports before its result)
    assert totals["fio_written"] == method
    assert totals["discarded"] >= (2 << 30) + (512 << 20), "purge + trim, counted there"
    assert abs(backing.stat().st_blocks * 512 / (2 << 30) - 0.75) < 0.01
    commands = [p.read_text() for p in run.run_dir.rglob("blkdiscard.cmd")]
    assert len(commands) == 2 and all(c.startswith(("ssh ", "/usr/bin/ssh ")) for c in commands)
    assert all("--client=sock:fio.sock" in p.read_text() for p in run.run_dir.rglob("fio.cmd"))
    assert server.settled() == [], "no fio server, agent or folder is left on the host"


SERVER_LOST = """
from pytest_ssd.fio.job import FioJob

# the fio servers of this test's host alone, by the tag its sshd gives every login
# (tests/own.py): another session's on this machine are not touched
KILL_SERVER = '''
for p in $(grep -l -s -z -x -F "SSD_TESTS_TAG=$SSD_TESTS_TAG" /proc/[0-9]*/environ |
           cut -d/ -f3); do
  grep -q -s -z -e '^--server=sock:' "/proc/$p/cmdline" && kill -KILL "$p"
done
'''


def test_first(ssd):
    job = FioJob("first", "rnd", 4096, size=16 << 20, runtime_s=0.3)
    assert ssd.run(job).directions["read"].io_bytes > 0
    # the host loses the fio server (an OOM kill, an admin): every fio of it, and only its
    ssd.machine.run(["sh", "-c", KILL_SERVER], timeout=30)


def test_second(ssd):
    ssd.run(FioJob("second", "rnd", 4096, size=16 << 20, runtime_s=0.3))
"""


def test_a_lost_fio_server_fails_the_test_saying_so(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    dev = loop_device(64)
    run = _suite_on_host(run_ssd, server, dev, tmp_path, SERVER_LOST)
    run.result.assert_outcomes(passed=1, failed=1)
    failed = [line for line in run.result.outlines if line.startswith("FAILED")]
    assert len(failed) == 1 and "test_second" in failed[0], run.result.stdout.str()
    said = _fio_error(run, dev, server)
    assert said.endswith(
        ": the fio server closed the connection (it is gone, or it refused the jobs)"
    )


# the same host's fio servers killed while a 30 s job reads (SERVER_LOST's KILL_SERVER)
SERVER_LOST_MID_RUN = (
    SERVER_LOST.split("def test_first", 1)[0]
    + """
def test_lost_while_it_runs(ssd):
    # the server up first (a first job), so the kill meets the long job and not its start
    ssd.run(FioJob("first", "rnd", 4096, size=16 << 20, runtime_s=0.3), record=False)
    # once the job's reads reach the device (its sysfs read count moves), a second more
    reads = f"n() {{ read r _ < /sys/block/{ssd.dut.path.name}/stat; echo $r; }}"
    wait = f"{reads}; s=$(n); i=0; while [ $(n) -le $s ] && [ $i -lt 600 ]; do"
    wait += " sleep 0.1; i=$((i+1)); done"
    later = f"({wait}; sleep 1; {KILL_SERVER}) </dev/null >/dev/null 2>&1 &"
    ssd.machine.run(["setsid", "sh", "-c", later], timeout=30)
    ssd.run(FioJob("long", "rnd", 4096, size=16 << 20, runtime_s=30))
"""
)


def test_a_fio_server_lost_while_the_jobs_run_is_said_in_words(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    dev = loop_device(64)
    run = _suite_on_host(run_ssd, server, dev, tmp_path, SERVER_LOST_MID_RUN)
    run.result.assert_outcomes(failed=1)
    # fio's own last line was the end of its JSON ('}'); its words were on stdout before it.
    # fio --client sees the loss one of two ways: it reads the close ("disconnected"), or a
    # status request it writes meets the closed socket and SIGPIPE ends it without a word
    said = _fio_error(run, dev, server)
    assert said.endswith(
        (
            ": the fio server (fio.sock) disconnected while the jobs ran (the server process"
            " ended, or the host or its connection went away): treat the device's contents as"
            " unknown",
            ": the fio server closed the connection (it is gone, or it refused the jobs)",
        )
    ), said


def _fio_error(run: Any, dev: Path, server: Sshd) -> str:
    """The run's one FioError line about *dev* on *server*; no traceback, and nothing of the
    server left on the host once the session ended."""
    out = run.result.stdout.str()
    where = f" on {dev} (ssh root@127.0.0.1 port {server.port}): "
    said = [line for line in run.result.outlines if line.startswith("FioError: fio exited ")]
    said = [line for line in said if where in line]
    assert len(said) == 1, out
    assert "Traceback" not in out
    assert server.settled() == [], "the session ended what was left of the server"
    return said[0]


ERASES = """
pytest_ssd_suite = True


class HostErase:
    name = "vendor-erase"

    def unsupported(self, identity):
        return None if identity.path.startswith("/dev/loop") else "only loop devices"

    def purge(self, identity, artifacts, machine):
        # --force: the session holds the device O_EXCL; blkdiscard would open it so too
        argv = ["blkdiscard", "--force", identity.path]
        done = machine.run(argv, timeout=60, artifacts=artifacts, name="vendor-blkdiscard")
        assert done.returncode == 0, done.stderr
        return f"blkdiscard on {machine.where or 'this machine'}"


class HereOnly:
    name = "here-only"

    def unsupported(self, identity):
        return None

    def purge(self, identity, artifacts):
        raise AssertionError("a method that runs its programs here never purges a host's device")


def pytest_ssd_purge_methods():
    return [HereOnly(), HostErase()]
"""
FOB = """
import pytest

@pytest.mark.dut_state("fob", pristine=True)
def test_after_the_erase(ssd):
    pass
"""


class PurgeOnHost:
    """A suite of one fob test and the purge methods of *conftest*, run on *dev* of a host."""

    def __init__(self, run_ssd: Any, server: Sshd, dev: Path, tmp_path: Path, conftest: str):
        self.suite = tmp_path / "purges"
        self.suite.mkdir()
        (self.suite / "conftest.py").write_text(conftest)
        (self.suite / "test_fob.py").write_text(FOB)
        self.where = f"ssh root@127.0.0.1 port {server.port}"
        self.args = (f"--dut={server.url(str(dev))}", f"--ssd-confirm={dev}")
        self.config = f"--ssd-ssh-config={server.config}"
        self.run = run_ssd(*self.args, self.config, suite=self.suite, rootdir=None)
        assert self.run.result.ret == 0, self.run.result.stdout.str()

    def purge_detail(self) -> str:
        """What the run's one purge step says it did."""
        (transition,) = self.run.results()["transitions"]
        (purge,) = [s for s in transition["steps"] if s["kind"] == "purge"]
        return str(purge["detail"])


def test_an_added_purge_method_that_takes_a_machine_purges_on_the_host(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    dev = loop_device(64)
    subprocess.run(
        ["dd", "if=/dev/urandom", f"of={dev}", "bs=1M", "count=64", "oflag=direct"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    host = PurgeOnHost(run_ssd, server, dev, tmp_path, ERASES)
    run, where, args, config, suite = host.run, host.where, host.args, host.config, host.suite
    assert host.purge_detail() == f"vendor-erase (added by a plugin): blkdiscard on {where}"
    assert list(run.run_dir.rglob("vendor-blkdiscard.cmd")), "run through the host's machine"
    assert digest(dev) == digest_of_zeroes(64), "the whole device erased"
    refused = run_ssd(*args, config, "--ssd-purge=here-only", suite=suite, rootdir=None)
    err = refused.result.stderr.str()
    assert refused.result.ret != 0
    assert f"--ssd-purge=here-only cannot purge {dev} on {where}: it runs its programs" in err
    assert "Traceback" not in err


def digest_of_zeroes(mib: int) -> str:
    return hashlib.sha256(bytes(mib << 20)).hexdigest()


SLOW = """
from pytest_ssd.fio.job import FioJob


def test_slow_write(ssd):
    job = FioJob("slow", "seq", 1 << 20, read_pct=0, io_bytes=1 << 30, extra=(("rate", "120m"),))
    assert ssd.run(job).directions["write"].io_bytes == 1 << 30
"""


def test_a_long_run_on_a_host_shows_its_progress_from_the_hosts_counters(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    # fio --client hears fio's status only when fio ends: the line comes from the host's
    # /sys/class/block/<dev>/stat, read there every 5 s (pytest_ssd.state.progress)
    dev = loop_device(1024)
    run = _suite_on_host(run_ssd, server, dev, tmp_path, SLOW)
    out = run.result.stdout.str()
    assert run.result.ret == 0, out
    dut_id = re.escape(server.device_id(dev))
    running = re.findall(rf"^{dut_id} slow: +([\d.]+) %  ([\d,]+) MiB/1,024 MiB .*$", out, re.M)
    assert running, out
    assert all(0 < float(pct) < 100 for pct, _ in running), "while it ran, not after"
    # the end: what the host's kernel counted in all, 1 GiB written
    assert re.search(rf"^{dut_id} slow: done in 0:00:\d\d \(1,024 MiB, [\d,]+ MiB/s\)", out, re.M)
    commands = [p.read_text() for p in run.run_dir.rglob("fio.cmd")]
    assert commands and not any("--status-interval" in c for c in commands)
    # the drive's label names the backing file and the host: the report's graph still lays out
    assert "constrained_layout not applied" not in out


DECLARED = """
from pytest_ssd import PurgeCapabilities

pytest_ssd_suite = True


class HereDeclared:
    # its purge takes a machine, yet it declares that it runs here only (a tool of ours)
    name = "declared-here"
    capabilities = PurgeCapabilities(local=True, hosts=False)

    def unsupported(self, identity):
        return None

    def purge(self, identity, artifacts, machine):
        raise AssertionError("declared for this machine only: never given a host's device")


class HostDeclared:
    name = "declared-host"
    capabilities = PurgeCapabilities(local=False, hosts=True, tools=("blkdiscard",))

    def unsupported(self, identity):
        return None

    def purge(self, identity, artifacts, machine):
        argv = [machine.which("blkdiscard", "util-linux"), "--force", identity.path]
        done = machine.run(argv, timeout=60, artifacts=artifacts, name="declared-blkdiscard")
        assert done.returncode == 0, done.stderr
        return f"blkdiscard on {machine.where}"


def pytest_ssd_purge_methods():
    return [HereDeclared(), HostDeclared()]
"""


def test_purge_methods_run_where_their_declared_capabilities_reach(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path
) -> None:
    dev = loop_device(64)
    host = PurgeOnHost(run_ssd, server, dev, tmp_path, DECLARED)
    where, args, config, suite = host.where, host.args, host.config, host.suite
    assert host.purge_detail() == f"declared-host (added by a plugin): blkdiscard on {where}"
    # naming a method whose capabilities do not reach the device: one line at configure
    for name, device, why in (
        ("declared-here", [*args, config], f"{dev} on {where}: it runs its programs on this"),
        ("declared-host", [f"--dut={dev}", f"--ssd-confirm={dev}"], f"{dev}: it purges devices"),
    ):
        refused = run_ssd(*device, f"--ssd-purge={name}", suite=suite, rootdir=None)
        err = refused.result.stderr.str()
        lines = [line for line in err.splitlines() if f"--ssd-purge={name} cannot purge" in line]
        assert refused.result.ret == 4 and len(lines) == 1, err
        assert f"--ssd-purge={name} cannot purge {why}" in lines[0]
        assert "Traceback" not in err and "INTERNALERROR" not in err
