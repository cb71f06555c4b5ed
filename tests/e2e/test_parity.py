"""The same cases on a local loop device and on one behind a test host's sshd (127.0.0.1).

A test host is not second-class: every case below runs twice, once with
``--dut=/dev/loopN`` and once with ``--dut=ssh://root@127.0.0.1:PORT/dev/loopN``
(a real sshd, tests/sshd.py), and must hold the same way in both: the smoke
suite, the consumer suite's batched low-QD points, a purge, ``--ssd-tune``, the
lock refusal, ``kill -9`` of pytest in the middle of a batch (nothing left
running or waiting on the machine the device is in) and ``--ssd-repeat=2``; and
each device job of the device's site, asked directly: the look (its node through
a link), the identity and summary, the guard's view of a mounted device, the lock
and the claim.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device import guard
from pytest_ssd.device.identity import identify
from pytest_ssd.device.node import canonical, device_key
from pytest_ssd.device.pinned import Pinned
from pytest_ssd.device.summary import summarize
from pytest_ssd.errors import DeviceError, FioError, SafetyError
from pytest_ssd.fio.batch import Batch
from pytest_ssd.fio.engine import check_target, run_jobs
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.results import FioOutput
from pytest_ssd.fio.runners import runner_on
from pytest_ssd.fio.server import FioServers
from pytest_ssd.fio.watch import EVERY_S, capacity, stall_watch
from pytest_ssd.health import find_source
from pytest_ssd.health.log import find_log_reader
from pytest_ssd.machine.address import parse_address
from pytest_ssd.machine.machine import LOCAL, Machine, SshMachine
from pytest_ssd.site import Site, Sites
from pytest_ssd.state.accounting import counters_on
from pytest_ssd.state.cpu import read_times
from pytest_ssd.state.progress import Plan, Progress, feeding
from tests.e2e.conftest import REPO, cssd_suite, smoke_argv
from tests.e2e.test_safety import ext4_device, mounted  # noqa: F401  (fixtures: a mounted ext4)
from tests.own import is_fio, tagged
from tests.sshd import Sshd

CSD = REPO / "suites" / "csd"
MIB = 1 << 20
LoopFactory = Callable[..., Path]


@dataclass(frozen=True)
class Where:
    """Where the device is: here (*server* None) or in the test host *server*."""

    name: str
    server: Sshd | None

    def dut(self, dev: Path) -> list[str]:
        """The options that name *dev* there."""
        if self.server is None:
            return [f"--dut={dev}", f"--ssd-confirm={dev}"]
        return [
            f"--dut={self.server.url(str(dev))}",
            f"--ssd-confirm={dev}",
            f"--ssd-ssh-config={self.server.config}",
        ]

    def device_id(self, dev: Path) -> str:
        """*dev*'s id there (a loop device: its node's name, after the host's)."""
        return dev.name if self.server is None else self.server.device_id(dev)


@pytest.fixture(params=["local", "host"])
def where(request: pytest.FixtureRequest) -> Where:
    if request.param == "local":
        return Where("local", None)
    return Where("host", request.getfixturevalue("server"))


def _holders(dev: Path) -> set[int]:
    """Processes with *dev* open (the test's own device: whoever holds it is the test's)."""
    found = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if fd.readlink() == dev:
                found.add(int(fd.parent.parent.name))
        except OSError:
            continue
    return found


def _fio(where: Where, tag: str) -> list[str]:
    """fio processes this test started (by its tag, tests/own.py) and the test host's logins."""
    procs = tagged(tag) | (where.server.processes() if where.server is not None else {})
    return [f"{pid} {cmdline}" for pid, cmdline in procs.items() if is_fio(cmdline)]


def _left(where: Where, dev: Path, tag: str) -> list[str]:
    """This test's fio processes, holders of *dev*, and whatever else the test host's logins
    left there (processes, folders)."""
    there = where.server.left() if where.server is not None else []
    return sorted({*_fio(where, tag), *(f"{p} holds {dev}" for p in _holders(dev)), *there})


def _settled(where: Where, dev: Path, tag: str, seconds: float = 60) -> list[str]:
    """What is still left after at most *seconds* (a reaper's grace, a host seeing EOF)."""
    deadline = time.monotonic() + seconds
    left = _left(where, dev, tag)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _left(where, dev, tag)
    return left


def _clean(run: Any) -> str:
    out: str = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    return out


def test_smoke(where: Where, loop_device: LoopFactory, run_ssd: Any, test_tag: str) -> None:
    dev = loop_device(1024)
    run = run_ssd(*where.dut(dev))
    out = _clean(run)
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=4)
    assert len(run.results()["measurements"]) == 4
    assert _settled(where, dev, test_tag) == []


def test_csd_low_qd1_is_batched(
    where: Where, loop_device: LoopFactory, run_ssd: Any, test_tag: str
) -> None:
    dev = loop_device(1024)
    run = run_ssd(*where.dut(dev), "-k", "low and qd1", suite=CSD, timeout=900)
    out = _clean(run)
    assert run.result.ret == 0, out
    # 2 patterns x 2 rounds x QD 1 x 0, 70, 100 % read
    run.result.assert_outcomes(passed=12)
    batches = sorted(p.name for p in (run.run_dir / "artifacts").glob("batch-*"))
    # each round's six points started together in one batch
    assert [name.split("test_low_qd_")[1] for name in batches] == [
        f"{where.device_id(dev)}-seq-cssd1-qd1-r0_",
        f"{where.device_id(dev)}-seq-cssd2-qd1-r0_",
    ], batches
    assert "fio batch failed" not in out and "not batched" not in out
    points = [m for m in run.results()["measurements"] if "low_qd" in m["test"]]
    # three runs a point (n0-n2), each with fio's figures
    assert len({m["test"] for m in points}) == 12 and len(points) == 36
    assert all(m["metrics"] for m in points)
    assert _settled(where, dev, test_tag) == []


def test_a_purge(where: Where, loop_device: LoopFactory, run_ssd: Any, tmp_path: Path) -> None:
    dev = loop_device(256)
    with dev.open("r+b") as fh:  # something for the purge to take away
        fh.write(os.urandom(1 << 20))
    run = run_ssd(*where.dut(dev), suite=cssd_suite(tmp_path))
    out = _clean(run)
    assert run.result.ret == 0, out
    run.result.assert_outcomes(passed=1)
    steps = [s["kind"] for t in run.results()["transitions"] for s in t["steps"]]
    assert steps[0] == "purge" and "fio" in steps, steps


def test_tune(
    where: Where,
    loop_device: LoopFactory,
    run_ssd: Any,
    as_found: Callable[..., Callable[[], dict[Path, str]]],
) -> None:
    dev = loop_device(256)
    now, before = _untuned(dev, as_found)
    run = run_ssd(*where.dut(dev), "--ssd-tune", "-k", "seq-read")
    out = _clean(run)
    assert run.result.ret == 0, out
    rows = run.results()["run"]["host_settings"]
    settings = {(r["key"], r["device"]): r["value"] for r in rows}
    assert settings[("scheduler", where.device_id(dev))] == "none", "none while measuring"
    assert now() == before, "every setting exactly as found"


def test_the_lock_refusal(where: Where, loop_device: LoopFactory, run_ssd: Any) -> None:
    dev = loop_device(64)
    holder = subprocess.Popen(["flock", "-o", str(dev), "sleep", "60"], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while str(holder.pid) not in Path("/proc/locks").read_text():
            assert time.monotonic() < deadline, "flock took its lock"
            time.sleep(0.05)
        run = run_ssd(*where.dut(dev))
        out = _clean(run)
        assert run.result.ret == 4, out
        errors = [line for line in run.result.stderr.lines if line.startswith("ERROR: ")]
        assert len(errors) == 1, out
        assert f"it is locked by pid {holder.pid} (flock -o {dev} sleep 60)" in errors[0]
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)


def _batch_running(reports: Path, where: Where, tag: str) -> bool:
    """A batch's folder exists and some fio of the test's runs."""
    return any(reports.glob("2*/artifacts/batch-*")) and bool(_fio(where, tag))


def test_kill_9_mid_batch_leaves_nothing(
    where: Where, loop_device: LoopFactory, tmp_path: Path, test_tag: str
) -> None:
    dev = loop_device(1024)
    reports = tmp_path / "reports"
    argv = smoke_argv(reports, *where.dut(dev), "--ssd-profile=quick", "-k", "low and qd1")
    argv[3] = str(CSD)  # the consumer suite, not smoke
    pytest_run = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while not _batch_running(reports, where, test_tag):
            assert pytest_run.poll() is None, "pytest ended before its first batch"
            assert time.monotonic() < deadline, "no batch in 600 s"
            time.sleep(0.1)
        time.sleep(1.0)  # a point measuring, the next ones started ahead at their gates
    finally:
        pytest_run.send_signal(signal.SIGKILL)  # pytest alone, as kill -9 PID
        pytest_run.wait(timeout=60)
    left = _settled(where, dev, test_tag)
    assert left == [], "no fio runs or waits at a gate, no server folder is left on the machine"
    assert _unlocked(dev), "nothing holds the device's lock: a new session may take it"


def _unlocked(dev: Path, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    with dev.open("rb") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)
            else:
                return True


def test_repeat_2(where: Where, loop_device: LoopFactory, run_ssd: Any) -> None:
    dev = loop_device(512)
    run = run_ssd(*where.dut(dev), "--ssd-repeat=2", "-k", "seq-write or rnd-read")
    out = _clean(run)
    assert run.result.ret == 0, out
    measured = run.results()["measurements"]
    per_test: dict[str, int] = {}
    for m in measured:
        per_test[m["test"]] = per_test.get(m["test"], 0) + 1
    assert len(per_test) == 2 and set(per_test.values()) == {2}, per_test


# --- each job of a device's machine, called directly on this machine and over SSH ---------


@pytest.fixture(params=["local", "host"])
def machine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Machine]:
    """This machine, or the test host (a real sshd on 127.0.0.1) with the same devices."""
    if request.param == "local":
        yield LOCAL
        return
    ssh = request.getfixturevalue("server").client(tmp_path.name)
    ssh.open()
    try:
        yield SshMachine(ssh)
    finally:
        ssh.close()


def _write(dev: Path, offset: int, data: bytes) -> None:
    """*data* at *offset* of *dev*, past the page cache (the kernel counts it at once)."""
    fd = os.open(dev, os.O_WRONLY | os.O_SYNC)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def test_the_kernel_counters_and_the_progress_feed(
    machine: Machine, loop_device: LoopFactory
) -> None:
    dev = loop_device(64)
    before = counters_on(machine, dev.name)
    assert before is not None and counters_on(machine, None) is None  # a file has none
    lines: list[str] = []
    follow = Progress("feed", Plan(total_bytes=MIB), lambda text, final: lines.append(text))
    with feeding(follow, machine, dev.name, live_status=False) as on_status:
        assert on_status is None, "fio's status comes only at its end: the counters feed"
        _write(dev, 0, os.urandom(MIB))
    after = counters_on(machine, dev.name)
    assert after is not None and (after - before).written >= MIB
    assert follow.done >= MIB, lines
    with feeding(follow, machine, dev.name, live_status=True) as on_status:
        assert on_status is follow, "fio's own status feeds the line where it comes live"
    with pytest.raises(DeviceError, match="the kernel's counters of the device cannot be read"):
        counters_on(machine, "no-such-disk")


def test_the_size_the_stall_watch_and_fios_disks(
    machine: Machine, loop_device: LoopFactory
) -> None:
    dev = loop_device(64)
    assert capacity(machine, str(dev)) == 64 * MIB
    job = FioJob("j", "seq", 4096, read_pct=0)
    found = stall_watch(machine, [job], str(dev), str(dev))
    assert found is not None and found.every_s == machine.poll_s and found._last is not None
    result = FioOutput("fio-3", "", (), ({"name": dev.name},))
    check_target(result, str(dev), machine)  # fio saw the device alone
    stranger = FioOutput("fio-3", "", (), ({"name": dev.name}, {"name": "vda"}))
    with pytest.raises(FioError, match="fio reported I/O on vda"):
        check_target(stranger, str(dev), machine)


def test_block_reads(machine: Machine, loop_device: LoopFactory) -> None:
    dev = loop_device(64)
    blocks = {0: os.urandom(4096), 5: os.urandom(4096)}
    for number, data in blocks.items():
        _write(dev, number * 4096, data)
    assert dict(machine.read_blocks(str(dev), 4096, [0, 5])) == blocks
    with pytest.raises(DeviceError):
        list(machine.read_blocks("/dev/no-such-disk", 4096, [0]))


def test_the_health_source_and_log(machine: Machine, loop_device: LoopFactory) -> None:
    identity = identify(loop_device(64), LOCAL)
    assert find_source(identity, machine) == (None, "a loop device has no temperature sensor")
    assert find_log_reader(identity, machine) == (None, "a loop device has no health log")
    sata = dataclasses.replace(identity, transport="sata", kernel_name="no-such-disk")
    source, what = find_source(sata, machine)
    if source is None:  # no smartmontools on this machine: the reason names the machine
        assert what.startswith("no hwmon sensor and smartctl is not installed" + machine.on)
    else:
        assert what == "smartctl" + machine.on


def test_a_batchs_gates(machine: Machine, loop_device: LoopFactory, tmp_path: Path) -> None:
    dev = loop_device(64)
    servers = FioServers()
    try:
        runner = runner_on(machine, servers)
        pinned = Pinned.of(device_key(dev), identify(dev, LOCAL))
        gates = runner.batch_gates(str(dev), pinned)
        assert gates.machine is machine and gates.capacity(str(dev)) == 64 * MIB
        jobs = [
            FioJob(f"p{n}", "rnd", 4096, read_pct=0, size=8 * MIB, io_bytes=MIB, seed=n)
            for n in range(3)
        ]
        # a job that logs its I/Os itself: the log is kept in its point's folder, wherever
        # fio ran (the agent removes the batch's folder there when the batch ends)
        jobs[1] = dataclasses.replace(jobs[1], extra=(("write_lat_log", "own"),))
        with Batch(jobs, dev, tmp_path / "batch", points=[1, 1, 1], gates=gates) as batch:
            assert gates.checks_device, "each release checks the pinned device at the gate"
            # the agent reads small files where fio runs (a request, not an SSH command):
            # the CPU record around a point and the stall watch's counters
            stat, missing = gates.read_many(["/proc/stat", "/proc/no-such-file"])
            assert stat is not None and stat.startswith("cpu ") and missing is None
            assert read_times(gates) is not None
            watch = gates.watch(jobs[:1], str(dev), str(dev))
            assert watch is not None and watch.every_s == EVERY_S and watch._last is not None
            for job in jobs:
                (result,) = batch.measure([job])
                assert result.directions["write"].io_bytes == MIB
            batch.close()
        log = batch.folder(jobs[1]) / "own_clat.1.log"
        assert len(log.read_text().splitlines()) == MIB // 4096, "a line per I/O"
        assert not list(batch.folder(jobs[0]).glob("*.log"))
    finally:
        assert servers.close() == [], "no fio of the server is left"


@contextlib.contextmanager
def _site(where: Where) -> Iterator[Site]:
    """The site of a device *where* is, in a session of its own (closed at the end)."""
    sites = Sites()
    address = None
    if where.server is not None:
        sites.machines.config = where.server.config
        address = parse_address(where.server.url("/dev/null"))
    try:
        yield sites.of(address)
    finally:
        sites.close()


def test_the_look_finds_the_node_and_identity_alike(
    where: Where, loop_device: LoopFactory, tmp_path: Path
) -> None:
    """A link with colons in its name (fio would split it) resolves to the kernel's node."""
    link, dev = tmp_path / "by-path:pci-0000:00:04.0", loop_device(64)
    link.symlink_to(dev)
    with _site(where) as site:
        views = site.snapshots([str(dev), str(link)])
        assert canonical(link, views[str(link)]) == canonical(dev, views[str(dev)]) == dev
        # one look identifies every block device it names, here as on a host
        assert views[str(dev)].identified[str(dev)] == identify(dev, LOCAL)
        key, identity = site.read(dev, views[str(dev)])
        st = dev.stat()
        assert key == ("block", os.major(st.st_rdev), os.minor(st.st_rdev))
        assert identity == site.read(dev)[1] == identify(dev, LOCAL)


def test_the_summary_reads_the_same_sysfs_alike(where: Where, loop_device: LoopFactory) -> None:
    dev = loop_device(64)
    with _site(where) as site:
        ((summary, said),) = site.summaries([identify(dev, LOCAL)])
    assert said == []
    expected = summarize(identify(dev, LOCAL))
    on = "" if where.server is None else f" on 127.0.0.1:{where.server.port}"
    assert summary == dataclasses.replace(expected, path=f"{dev}{on}")


def test_fio_runs_where_the_machine_lets_it_and_the_site_names_it_alike(
    where: Where, loop_device: LoopFactory, tmp_path: Path
) -> None:
    """One site class: fio a child of this process with its status live where the
    machine's programs are, else ``fio --client`` of the machine's one server (stopped
    with the session, nothing left); the labels as the machine names itself."""
    dev = loop_device(64)
    job = FioJob("w", "rnd", 4096, read_pct=0, size=8 * MIB, io_bytes=MIB, seed=5)
    port = where.server.port if where.server is not None else None
    here, on = port is None, f" on 127.0.0.1:{port}" if port else ""
    with _site(where) as site:
        runner = site.runner()
        assert runner.machine is site.machine and runner.live_status is here
        done = run_jobs([job], dev, artifacts=tmp_path / "fio", runner=runner)
        assert done.result(job).directions["write"].io_bytes == MIB
        assert site.labelled("loop") == f"loop{on}"
        reached = f" on root@127.0.0.1 port {port}" if port else ""
        assert site.described("64 MiB") == f"64 MiB{reached}"
        assert site.located(dev) == str(dev) + site.machine.on
    assert _settled(where, dev, "none") == [], "no fio, no holder left on the machine"


def test_a_mounted_device_is_refused_by_the_view_and_the_claim_alike(
    where: Where,
    mounted: tuple[Path, Path],  # noqa: F811  (the fixture)
) -> None:
    dev, mnt = mounted
    with _site(where) as site:
        view = site.view(str(dev), None, frozenset())
        refusal = guard.refusal(guard.inspect(dev, view=view), view.where)
        assert refusal is not None and f"it is mounted at {mnt}" in refusal
        _, identity = site.read(dev)
        lock = site.lock(dev, site.key(dev, site.snapshot(str(dev)), str(dev)))
        assert lock.pinned(identity).key == ("block", *divmod_dev(dev))
        with pytest.raises(SafetyError, match="it is in use"):
            lock.claim()


def divmod_dev(dev: Path) -> tuple[int, int]:
    st = dev.stat()
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def test_a_second_sessions_lock_is_refused_until_the_first_ends_alike(
    where: Where, loop_device: LoopFactory
) -> None:
    dev = loop_device(64)
    with _site(where) as first:
        key = first.key(dev, first.snapshot(str(dev)), str(dev))
        held = first.lock(dev, key)
        assert held.pid is not None
        with _site(where) as second, pytest.raises(SafetyError) as refused:
            second.lock(dev, key)
        assert "it is locked by" in str(refused.value) and "one session per device" in str(
            refused.value
        )
        held.claim()  # nothing else holds it: the claim is the session's
    with _site(where) as third:
        third.lock(dev, key).claim()  # the first session's lock and claim went with it


def test_one_tuner_tunes_restores_and_recovers_either_machine(
    machine: Machine,
    loop_device: LoopFactory,
    tmp_path: Path,
    as_found: Callable[..., Callable[[], dict[Path, str]]],
) -> None:
    from pytest_ssd.host import TuneError, Tuner  # noqa: PLC0415  (the controller's)

    dev = loop_device(64)
    scheduler = Path(f"/sys/block/{dev.name}/queue/scheduler")
    now, before = _untuned(dev, as_found, Path("/proc/sys/kernel/randomize_va_space"))
    folder, devices = tmp_path / "tune", {"dut": identify(dev, LOCAL)}
    tuned = Tuner(machine, True, folder=folder)
    warnings: list[str] = []
    readings = {(r.key, r.device): r for r in tuned.start(devices, warnings)}
    assert readings[("scheduler", "dut")].value == "none" and scheduler.read_text() != before
    assert readings[("thp", None)].host == machine.host, "the machine's own row"
    assert oct((folder / "restore.json").stat().st_mode & 0o777) == "0o600"
    # the holder named: this process here, the host's flock there
    with pytest.raises(
        TuneError, match=r"^pytest-ssd \(pid \d+ \(.+\)\) has tuned .*still running"
    ):
        Tuner(machine, True, folder=folder).recover()  # beside a live session: refused
    tuned.release_lock()  # killed: the kernel lets the lock go, nothing is put back
    assert now() != before and (folder / "restore.json").exists()
    recovered = Tuner(machine, False, folder=folder)
    recovered.recover()
    assert now() == before, "every setting exactly as found"
    assert not (folder / "restore.json").exists() and recovered.log.refused == []
    label = f"{machine.host}: " if machine.host else ""
    lines = recovered.summary_lines()
    assert lines and all(line.startswith(f"{label}recovered: /") for line in lines), lines
    again = Tuner(machine, True, folder=folder)  # the lock is free again: tuned, put back
    again.start(devices, warnings)
    again.restore()
    assert now() == before and not (folder / "restore.json").exists() and warnings == []


def _untuned(
    dev: Path, watch: Callable[..., Callable[[], dict[Path, str]]], *more: Path
) -> tuple[Callable[[], dict[Path, str]], dict[Path, str]]:
    """THP, *more* and *dev*'s scheduler *watch*\\ ed (put back as found at teardown), the
    scheduler off the method's ``none``: the reader of them now, and what it reads."""
    scheduler = Path(f"/sys/block/{dev.name}/queue/scheduler")
    if "mq-deadline" not in scheduler.read_text():
        pytest.skip(f"{scheduler} offers no mq-deadline to start from")
    now = watch(Path("/sys/kernel/mm/transparent_hugepage/enabled"), scheduler, *more)
    scheduler.write_text("mq-deadline")
    return now, now()
