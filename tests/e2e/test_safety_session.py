"""Safety of the session through the real plugin: the node fio opens, one session per device,
a refused run leaves nothing, and nothing is left behind after Ctrl-C or ``kill -9``.

Devices are loop devices filled with random data; every refusal leaves them byte-identical.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, attached_loops, digest, smoke_argv

USAGE_ERROR = 4
DATASHEET = REPO / "datasheets" / "samsung-850-evo-1tb.toml"


def _one_error(run: Any) -> str:
    """The one ERROR line of a refused run: exit 4, no traceback, no INTERNALERROR."""
    out = run.result.stdout.str() + run.result.stderr.str()
    assert run.result.ret == USAGE_ERROR, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    errors = [line for line in run.result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, run.result.errlines
    return str(errors[0])


def _stray_files(folder: Path, names: tuple[str, ...]) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name in names and p.is_file()]


def test_by_path_name_with_colons_measures_the_device_node(
    run_ssd: Any, random_loop: Path, tmp_path: Path, pytester: pytest.Pytester
) -> None:
    link = tmp_path / "by-path" / "pci-0000:00:04.0"
    link.parent.mkdir()
    link.symlink_to(random_loop)
    before = digest(random_loop)
    line = _one_error(run_ssd(f"--dut={link}"))
    assert f"--ssd-confirm={random_loop}" in line, "the refusal names the node, not the link"
    assert digest(random_loop) == before
    run = run_ssd(f"--dut={link}", f"--ssd-confirm={random_loop}", "-k", "rnd-write")
    run.result.assert_outcomes(passed=1, deselected=3)
    (device,) = run.results()["devices"].values()
    assert device["path"] == str(random_loop)
    assert digest(random_loop) != before, "the confirmed device itself was measured"
    pieces = ("pci-0000", "00", "04.0")
    assert not _stray_files(tmp_path, pieces) and not _stray_files(pytester.path, pieces)


def test_file_with_a_colon_is_measured_in_place(run_ssd: Any, tmp_path: Path) -> None:
    target = tmp_path / "a:b.img"
    with target.open("wb") as fh:
        fh.truncate(64 << 20)
    run = run_ssd(f"--dut={target}", f"--ssd-confirm={target}", "-k", "rnd-write")
    run.result.assert_outcomes(passed=1, deselected=3)
    job = next((run.run_dir / "artifacts").glob("*/*/fio.job")).read_text()
    assert f"filename={tmp_path}/a\\:b.img\n" in job
    assert not (tmp_path / "a").exists() and not (tmp_path / "b.img").exists()


@pytest.mark.parametrize("name", ["c;d.img", "e#f.img", "g$HOME.img"])
def test_path_fio_would_cut_or_expand_is_refused(run_ssd: Any, tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    target.write_bytes(os.urandom(64 << 20))
    before = digest(target)
    line = _one_error(run_ssd(f"--dut={target}", f"--ssd-confirm={target}"))
    assert "fio cannot be given the path" in line and "rename it" in line, line
    assert digest(target) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [name]


def test_control_characters_in_a_path_are_refused(
    run_ssd: Any, random_loop: Path, loop_device: Any
) -> None:
    other: Path = loop_device(64)
    before = digest(random_loop), digest(other)
    crafted = f"{random_loop}\nfilename={other}"
    line = _one_error(run_ssd(f"--dut={crafted}", f"--ssd-confirm={random_loop}"))
    assert "control characters" in line and "\\x0a" in line, line
    assert (digest(random_loop), digest(other)) == before


def test_the_same_device_named_twice_is_refused(
    run_ssd: Any, random_loop: Path, tmp_path: Path
) -> None:
    link = tmp_path / "disk-link"
    link.symlink_to(random_loop)
    before = digest(random_loop)
    run = run_ssd(f"--dut={random_loop}", f"--dut={link}", f"--ssd-confirm={random_loop}")
    line = _one_error(run)
    assert f"--dut={link}: it is the same device as --dut={random_loop}" in line, line
    assert digest(random_loop) == before


def _popen(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    proc.communicate(timeout=60)


def _wait_for(predicate: Callable[[], bool], what: str, limit: float = 90) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {limit} s")
        time.sleep(0.1)


def _pytest(reports: Path, *args: str) -> list[str]:
    return smoke_argv(reports, "--ssd-profile=quick", *args)


def _fio_jobs(reports: Path) -> list[Path]:
    return list(reports.glob("2*/artifacts/*/*/fio.job"))  # run folders, not latest


def test_a_second_session_on_the_device_is_refused_naming_the_first(
    run_ssd: Any, random_loop: Path, tmp_path: Path
) -> None:
    first_reports = tmp_path / "first"
    first = _popen(
        _pytest(first_reports, f"--dut={random_loop}", f"--ssd-confirm={random_loop}"), tmp_path
    )
    try:
        _wait_for(lambda: bool(_fio_jobs(first_reports)) or first.poll() is not None, "fio")
        assert first.poll() is None, first.communicate()[0]
        line = _one_error(run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}"))
        assert f"refusing {random_loop}: it is locked by pid {first.pid} (" in line, line
        assert "one session per device" in line
    finally:
        _stop(first)
    assert not list((tmp_path / "reports").glob("2*")), "the refused run made no run folder"


def test_a_device_locked_with_flock_is_refused(run_ssd: Any, random_loop: Path) -> None:
    # -o: only flock holds the lock, not the sleep it starts
    holder = subprocess.Popen(
        ["flock", "-o", str(random_loop), "sleep", "60"], start_new_session=True
    )
    try:
        _wait_for(lambda: str(holder.pid) in Path("/proc/locks").read_text(), "flock")
        before = digest(random_loop)
        line = _one_error(run_ssd(f"--dut={random_loop}", f"--ssd-confirm={random_loop}"))
        assert f"it is locked by pid {holder.pid} (flock -o {random_loop} sleep 60)" in line, line
        assert digest(random_loop) == before
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)


def test_a_refused_run_leaves_nothing(run_ssd: Any, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    _one_error(run_ssd("--dut=/dev/nvme97n1", "--ssd-confirm=/dev/nvme97n1"))
    assert not reports.exists(), list(reports.rglob("*"))
    (reports / "20250101-000000-1").mkdir(parents=True)
    (reports / "latest").symlink_to("20250101-000000-1")
    line = _one_error(run_ssd("--dut=scratch:128M", f"--datasheet={DATASHEET}"))
    assert "does not match" in line
    assert sorted(p.name for p in reports.iterdir()) == ["20250101-000000-1", "latest"]
    assert (reports / "latest").readlink() == Path("20250101-000000-1")
    assert not list(reports.glob(".scratch/*")) and str(reports) not in attached_loops()


@pytest.mark.parametrize("kind", ["file", "folder", "foreign link"])
def test_a_latest_that_is_not_ours_is_left_alone(run_ssd: Any, tmp_path: Path, kind: str) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    latest = reports / "latest"
    if kind == "file":
        latest.write_text("my notes\n")
    elif kind == "folder":
        (latest / "inside").mkdir(parents=True)
    else:
        latest.symlink_to("/etc")
    run = run_ssd("--dut=scratch:64M", "-k", "seq-read")
    run.result.assert_outcomes(passed=1, deselected=3)
    assert f"warning: {latest} is" in run.result.stdout.str() and "left as it is" in (
        run.result.stdout.str()
    )
    if kind == "file":
        assert latest.read_text() == "my notes\n"
    elif kind == "folder":
        assert [p.name for p in latest.iterdir()] == ["inside"]
    else:
        assert latest.readlink() == Path("/etc")
    assert len(list(reports.glob("2*/results.json"))) == 1


def test_a_file_smaller_than_the_smallest_workload_is_refused_before_confirmation(
    run_ssd: Any, tmp_path: Path
) -> None:
    target = tmp_path / "passwd"
    target.write_bytes(os.urandom(1434))
    before = digest(target)
    line = _one_error(run_ssd(f"--dut={target}"))
    assert f"{target} holds 1.4 KiB: pytest-ssd measures targets of at least 64.0 MiB" in line
    assert "--ssd-confirm" not in line
    assert digest(target) == before


def test_scratch_larger_than_the_free_space_is_refused(run_ssd: Any, tmp_path: Path) -> None:
    line = _one_error(run_ssd("--dut=scratch:900T"))
    assert "scratch devices of 900.0 TiB do not fit in the" in line, line
    assert not (tmp_path / "reports").exists()


@pytest.fixture
def reports_pair(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Two report folders; any scratch a killed run left in the first is released at the end."""
    first, second = tmp_path / "first", tmp_path / "second"
    yield first, second
    for line in attached_loops().splitlines():
        if str(tmp_path) in line:
            dev = line.split(":", 1)[0]
            subprocess.run(["losetup", "-d", dev], check=False, capture_output=True, timeout=30)


def _running(needle: str) -> list[str]:
    argv = ["ps", "-eww", "-o", "args"]
    ps = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30)
    fio = [line for line in ps.stdout.splitlines() if line.split(" ")[0].endswith("/fio")]
    return [line for line in fio if needle in line]


def test_kill_9_stops_fio_and_the_next_session_releases_the_scratch(
    reports_pair: tuple[Path, Path], tmp_path: Path
) -> None:
    first, second = reports_pair
    proc = _popen(_pytest(first, "--dut=scratch:128M"), tmp_path)
    try:
        _wait_for(lambda: bool(_running(str(first))) or proc.poll() is not None, "fio")
        assert proc.poll() is None, proc.communicate()[0]
    finally:
        proc.kill()  # pytest alone: fio runs in a session of its own
        proc.communicate(timeout=60)
    _wait_for(lambda: not _running(str(first)), "fio stopping after kill -9", limit=3)
    assert str(first) in attached_loops(), "the killed run could not release its scratch"
    # any later session, with any report folder, even one that is refused
    refused = _pytest(second, "--dut=/dev/nvme97n1")
    subprocess.run(refused, check=False, cwd=tmp_path, capture_output=True, timeout=120)
    assert str(first) not in attached_loops()
    assert not list(first.glob(".scratch/*.img"))


def test_ctrl_c_to_a_pipeline_releases_the_scratch(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    command = " ".join(_pytest(reports, "--dut=scratch:128M")) + " | tee log > /dev/null"
    proc = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, start_new_session=True)
    try:
        _wait_for(lambda: len(_fio_jobs(reports)) >= 2, "the second test's fio")
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: pytest and tee alike
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    _wait_for(lambda: str(reports) not in attached_loops(), "scratch release", limit=10)
    assert not list(reports.glob(".scratch/*.img"))
    assert not _running(str(reports))
    db = sqlite3.connect(reports / "results.sqlite")
    with db:
        assert db.execute("SELECT count(*) FROM measurements").fetchone()[0] >= 1
    db.close()
