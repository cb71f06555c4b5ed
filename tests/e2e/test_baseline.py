"""A build against a baseline build end to end: a "new build" slowed by a blkio cgroup.

The baseline run and the new build's run measure the same points on the same loop
device with ``--ssd-repeat=5``; the new build runs in a cgroup v1 ``blkio`` group that
caps the device's reads at 300 IOPS (writes untouched).  The slowed read regresses and
fails its test in one line; the untouched write is same or unknown, never regressed;
``pytest-ssd compare --gate`` exits 1; one run against one run is unknown throughout.
A datasheet's ``[baseline]`` band, in the run and given to the gate, judges alike.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.cli import main
from pytest_ssd.verdict.judge import BUSIER, WAITED

#: a quiet run's share of time a task waited for a CPU beyond which added load cannot show
#: (the test suite alone here: 73 %; other sessions' tests beside it: 90 %)
SATURATED = 0.85

pytestmark = pytest.mark.slow

BLKIO = Path("/sys/fs/cgroup/blkio")
#: the new build's read ceiling (the loop device reads ~10k to 50k IOPS free)
CAP_IOPS = 300
POINTS = "rnd-read or rnd-write"


def _own_blkio_group() -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "blkio" in controllers.split(","):
            return BLKIO / path.lstrip("/")
    raise AssertionError("this process is in no blkio cgroup")


@contextlib.contextmanager
def reads_capped(device: Path, iops: int) -> Iterator[None]:
    """This process, and every process it starts meanwhile, in a child blkio cgroup of its own
    that caps *device*'s reads at *iops*; moved back and the group removed afterwards."""
    if not (BLKIO / "blkio.throttle.read_iops_device").exists():
        pytest.skip("no cgroup v1 blkio throttle on this kernel")
    rdev = device.stat().st_rdev
    home = _own_blkio_group()
    group = home / f"pytest-ssd-verdicts-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        limit = f"{os.major(rdev)}:{os.minor(rdev)} {iops}\n"
        (group / "blkio.throttle.read_iops_device").write_text(limit)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        yield
    finally:
        (home / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(60):  # a child that has not exited yet keeps the group busy
            with contextlib.suppress(OSError):
                group.rmdir()
                break
            time.sleep(0.5)
        assert not group.exists(), f"{group} still holds processes"


@pytest.fixture
def ram_loop() -> Iterator[Path]:
    """A 128 MiB loop device on a file in /dev/shm, detached and removed afterwards.

    In RAM, not on the disk every other test's loop device shares: the untouched points
    of two runs minutes apart then differ by the CPU's load alone, not by another test's
    fio on the same disk (on disk a quiet baseline and a busy new run measured rnd-write
    110k against 35k IOPS, p99 8x: a real difference, but the host's).
    """
    if os.geteuid() != 0:
        pytest.skip("loop devices need root")
    backing = Path("/dev/shm") / f"pytest-ssd-verdicts-{os.getpid()}-{uuid.uuid4().hex[:8]}.img"
    with backing.open("wb") as fh:
        fh.truncate(128 << 20)
    argv = ["losetup", "--find", "--show", str(backing)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
        device = Path(done.stdout.strip())
        try:
            yield device
        finally:
            subprocess.run(["losetup", "-d", str(device)], check=False, timeout=30)
    finally:
        backing.unlink()


def _clean(run: Any) -> str:
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    return out


def _verdicts(run: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(point, direction, metric) -> the verdict the run recorded."""
    found = {}
    for record in run.results()["derived"]:
        if record["name"] == "baseline":
            for v in record["values"]["verdicts"]:
                found[(v["point"], v["direction"], v["metric"])] = v
    return found


def _junit_properties(path: Path, test: str) -> dict[str, str]:
    case = next(c for c in ET.parse(path).iter("testcase") if c.get("name", "").endswith(test))
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


def _sheet(tmp_path: Path) -> Path:
    """A datasheet whose ``[baseline]`` gives rnd-read's IOPS a band so wide (1,000×) that
    the capped reads' IOPS are "same"; its one spec line matches no point of the run."""
    sheet = tmp_path / "sheet.toml"
    sheet.write_text(
        '[drive]\nname = "loop"\nmodel = "*"\ncapacity_gb = 0.134\n'
        '[[specs]]\nid = "unused"\nmetric = "iops"\nunit = "IOPS"\npattern = "seq"\n'
        'direction = "write"\nblock_size = 512\nqd = 1\nstate = "fob"\nvalue = 1\n'
        'kind = "ceiling"\n'
        "[baseline.workload.rnd-read]\niops = 100000\n"
    )
    return sheet


def test_a_slowed_build_regresses_and_fails_its_test_and_the_gate(
    run_ssd: Any, ram_loop: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    device = ram_loop
    target = (f"--dut={device}", f"--ssd-confirm={device}", "-k", POINTS, "--ssd-repeat=5")
    base = run_ssd(*target, "--dut-label=build 1", "--ssd-build=1.0")
    _clean(base)
    base.result.assert_outcomes(passed=2)

    junit = tmp_path / "junit.xml"
    sheet = _sheet(tmp_path)
    with reads_capped(device, CAP_IOPS):
        new = run_ssd(
            *target,
            "--dut-label=build 2",
            "--ssd-build=2.0",
            "--ssd-baseline=build 1",
            f"--junitxml={junit}",
            f"--datasheet={sheet}",
            "--datasheet-force",
        )
    out = _clean(new)
    new.result.assert_outcomes(passed=1, failed=1)
    # the run's own summary says it per drive, as the gate does
    summary = out[out.index("pytest-ssd: against the baseline") :]
    assert re.search(  # ... naming both sides' builds
        r"\n\S+ against run \S+, build 1, build 2.0 against 1.0: [1-9]\d* regressed, ", summary
    ), summary
    assert re.search(r"\ngate failed: \S+ against run \S+, build 1 regressed\n", summary)
    verdicts = _verdicts(new)
    # the slowed point: fewer MiB/s, longer latencies, each beyond the noise
    for metric in ("bw_mib_s", "lat_mean_us"):
        assert verdicts[("rnd-read", "read", metric)]["verdict"] == "regressed", metric
    assert verdicts[("rnd-read", "read", "bw_mib_s")]["tolerance_from"] == (
        "derived from the runs' spread"
    )
    # its IOPS as far below the baseline, but inside the datasheet's band: same, and it says so
    slow = verdicts[("rnd-read", "read", "iops")]
    assert slow["verdict"] == "same", slow
    assert slow["ratio"] < 0.2 and slow["p_worse"] == pytest.approx(1 / 252)
    where = f'{sheet} [baseline.workload."rnd-read"] iops'
    assert slow["tolerance_from"] == where and slow["tolerance"] == 1000
    assert f"band ±100,000 % from {where})" in slow["line"]
    # the failure is one line of the regressed point
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "rnd-read" in failed[0], failed
    assert "build 2.0 against 1.0: rnd-read read " in out, "the failure names both builds"
    assert "× the baseline (95 % CI" in out and "p = 0.004" in out
    # the write the cgroup left alone: never regressed (a machine busier during the baseline's
    # run than during this one can make it truly faster: "improved" is a real difference)
    writes = {k: v["verdict"] for k, v in verdicts.items() if k[0] == "rnd-write"}
    assert writes and set(writes.values()) <= {"same", "unknown", "improved"}, writes
    props = _junit_properties(junit, "rnd-read]")
    assert props["rnd-read.read.iops.baseline"] == "same" and props["ssd.build"] == "2.0"
    assert props["rnd-read.read.bw_mib_s.baseline"] == "regressed"
    assert float(props["rnd-read.read.iops.baseline_ratio"]) < 0.2
    assert props["baseline.regressed"] != "0"

    db = str(new.report_dir / "results.sqlite")
    capsys.readouterr()
    gate = ["--db", db, "compare", "build 1", "build 2", "--gate", "-o", str(tmp_path / "c.html")]
    code = main(gate)
    table = capsys.readouterr().out
    assert code == 1, table
    assert re.search(
        r"^regressed  (\S+ · )?\S*test_four_corners\[rnd-read\] · rnd-read read IOPS",
        table,
        re.M,
    ), "no datasheet: the runs' spread; the state group and the test named"
    assert not any(
        line.startswith("regressed") and "rnd-write" in line for line in table.splitlines()
    )
    assert re.search(r"^gate failed: build 2 \(\S+\) regressed$", table, re.M), table
    page = (tmp_path / "c.html").read_text()
    # the report's part names both sides' builds
    assert all(s in page for s in ('id="ssd-baseline"', "build 2 against ", "2.0 against 1.0"))
    # the gate given the run's datasheet judges as the run did
    code = main([*gate, "--datasheet", str(sheet)])
    table = capsys.readouterr().out
    assert code == 1, table
    assert re.search(r"^regressed  .*· rnd-read read MiB/s:", table, re.M), table
    assert re.search(
        r"^build 2 \(\S+\), build 2.0 against 1.0: \d+ regressed, \d+ improved, [1-9]\d* same,",
        table,
        re.M,
    ), table


def test_one_run_against_one_is_unknown_never_a_pass_or_a_fail(
    run_ssd: Any, loop_device: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    device = loop_device(64)
    target = (f"--dut={device}", f"--ssd-confirm={device}", "-k", "rnd-read")
    base = run_ssd(*target, "--dut-label=one")
    _clean(base)
    with reads_capped(device, CAP_IOPS):
        new = run_ssd(*target, "--dut-label=other", "--ssd-baseline=one", "-n", "1")
    _clean(new)
    # judged on an xdist worker (from the run folder's baseline.json), unknown: the test's
    # own checks decide; the controller's summary says nothing was judged, and what to do
    new.result.assert_outcomes(passed=1)
    said = new.result.stdout.str()
    assert re.search(
        r"\n\S+ against run \S+, one, unknown build against unknown build: 0 regressed,"
        r" 0 improved, 0 same, \d+ unknown",
        said,
    ), "a loop device without --ssd-build: no build on either side, and it says so"
    assert "  run 3 more repeats a side (--ssd-repeat=4 on both builds)" in said
    assert "gate failed: not judged: " in said
    verdicts = _verdicts(new)
    assert verdicts and {v["verdict"] for v in verdicts.values()} == {"unknown"}
    assert all(v["repeats_needed"] == 4 for v in verdicts.values())
    db = str(new.report_dir / "results.sqlite")
    capsys.readouterr()
    gate = ["--db", db, "compare", "one", "other", "--gate", "-o", str(tmp_path / "c.html")]
    assert main(gate) == 5, "a gate that judged nothing has not passed"
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert re.match(
        r"other \(\S+\), unknown build against unknown build: 0 regressed, 0 improved, 0 same,"
        r" \d+ unknown$",
        lines[-3],
    ), lines
    assert lines[-2].startswith("  run 3 more repeats a side (--ssd-repeat=4 on both builds)")
    assert lines[-1].startswith("gate failed: not judged: other"), table
    assert main([*gate, "--allow-unknown"]) == 0, "unless the pipeline allows unknowns"


def test_a_baseline_the_database_lacks_refuses_the_run_in_one_line(
    run_ssd: Any, tmp_path: Path
) -> None:
    run = run_ssd("--dut=scratch:64M", "--ssd-baseline=build 0")
    out = _clean(run)
    assert run.result.ret == 4, out  # a usage error, before the first test
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert errors == [
        f"ERROR: {tmp_path / 'reports' / 'results.sqlite'}: no results database here"
        " (a pytest-ssd run creates it)"
    ]
    assert not (tmp_path / "reports").exists(), "nothing was made"


def machine(run: Any) -> list[dict[str, float]]:
    """What each measurement of *run* recorded of its machine's CPUs."""
    return [m["workload"]["host_cpus"] for m in run.results()["measurements"]]


@contextlib.contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """*processes* CPU-bound shells of the test's own, killed (and reaped) afterwards."""
    spinners = [
        subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
        for _ in range(processes)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait(timeout=30)


@pytest.mark.alone  # its quiet run must be quiet: not beside the other workers' tests
def test_a_load_beside_the_new_run_is_never_a_regression(
    run_ssd: Any, ram_loop: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unchanged drive measured again while other work keeps the host's CPUs busy: fio
    gets less CPU and the random reads slow down (here to about half, their p99 18×), yet
    each repeat recorded what its machine did beside fio (``workload.host_cpus``), so the
    gate calls nothing "regressed": those lines are unknown, saying why."""
    device = ram_loop
    target = (f"--dut={device}", f"--ssd-confirm={device}", "-k", "rnd-read", "--ssd-repeat=4")
    quiet = run_ssd(*target, "--dut-label=quiet")
    _clean(quiet)
    before = machine(quiet)  # read now: the next run is the report folder's latest
    with cpu_load(4):
        loaded = run_ssd(*target, "--dut-label=loaded")
    _clean(loaded)
    during = machine(loaded)
    assert len(before) == len(during) == 4
    assert all({"busy", "fio", "others", "waiting"} <= set(cpus) for cpus in before + during)
    assert min(c["busy"] for c in during) > 1.5, "the host's CPUs were busy (2 here)"

    def median(cpus: list[dict[str, float]], key: str) -> float:
        return sorted(c[key] for c in cpus)[len(cpus) // 2]

    if median(before, "waiting") >= SATURATED:
        pytest.skip(
            f"the machine was saturated before the load (a task waited for a CPU"
            f" {median(before, 'waiting'):.0%} of the quiet run): no load can show beside it"
        )
    # what makes a claim of the loaded run unknown (verdict.judge.busier), as recorded
    assert (
        median(during, "waiting") - median(before, "waiting") >= WAITED
        or median(during, "busy") - median(before, "busy") >= BUSIER
    ), (before, during)
    db = str(loaded.report_dir / "results.sqlite")
    capsys.readouterr()
    gate = ["--db", db, "compare", "quiet", "loaded", "--gate", "-o", str(tmp_path / "c.html")]
    code = main(gate)
    table = capsys.readouterr().out
    assert code != 1, table
    assert not re.search(r"^regressed", table, re.M), table
