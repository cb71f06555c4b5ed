"""A device's id is what the drive is, whatever the order of the --dut options.

Two loop devices named by two paths of one name (``.../a/disk`` and ``.../b/disk``,
symbolic links): numbered by position they were ``disk`` and ``disk-2``, each the other
drive once the options swapped.  Named by what they are (on a test host: its address and
port, then the node), every test id, results.json and the database name each drive the
same way in both orders, with and without ``-n``; and a run cut short is resumed with
the options swapped, each kept test with the drive that measured it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import SMOKE, SsdRun
from tests.e2e.test_resume import _argv, _rows, _stopped, exited
from tests.sshd import Sshd

LoopFactory = Callable[..., Path]
#: the smoke suite's tests on each device
CORNERS = 4


@contextlib.contextmanager
def _named_disk(folder: Path, *devices: Path) -> Iterator[list[Path]]:
    """``folder/a/disk``, ``folder/b/disk``, ...: a link to each device, all of one name."""
    links = []
    try:
        for letter, dev in zip("abcdefgh", devices, strict=False):
            (folder / letter).mkdir(parents=True)
            link = folder / letter / "disk"
            link.symlink_to(dev)
            links.append(link)
        yield links
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _named(run: SsdRun) -> tuple[dict[str, str], dict[str, set[str]], dict[str, str]]:
    """What the run named each device: results.json's id -> node, each node's test ids, and
    the database's id -> node for this run."""
    results = run.results()
    nodes = {dut_id: d["identity"]["path"] for dut_id, d in results["devices"].items()}
    tests: dict[str, set[str]] = {}
    for m in results["measurements"]:
        tests.setdefault(nodes[m["device"]], set()).add(m["test"])
    sql = "SELECT dut_id, description FROM run_devices WHERE run_id = ?"
    with contextlib.closing(sqlite3.connect(run.report_dir / "results.sqlite")) as db:
        rows = db.execute(sql, (results["run"]["id"],)).fetchall()
    recorded = {dut_id: json.loads(text)["identity"]["path"] for dut_id, text in rows}
    return nodes, tests, recorded


def test_a_test_hosts_devices_keep_their_ids_when_the_options_swap(
    server: Sshd, loop_device: LoopFactory, run_ssd: Any
) -> None:
    first, second = loop_device(256), loop_device(256)
    # a test host's device path is under /dev: /dev/shm is the folder a test may write there
    with _named_disk(Path(tempfile.mkdtemp(dir="/dev/shm", prefix="ssd-ids-")), first, second) as (
        a,
        b,
    ):
        common = (f"--ssd-confirm={first}", f"--ssd-confirm={second}")
        config = f"--ssd-ssh-config={server.config}"
        urls = (f"--dut={server.url(str(a))}", f"--dut={server.url(str(b))}")
        runs = [
            run_ssd(*urls, *common, config),
            run_ssd(*reversed(urls), *common, config, "-n", "2"),
        ]
    for run in runs:
        assert run.result.ret == 0, run.result.stdout.str()
        run.result.assert_outcomes(passed=2 * CORNERS)
    named = [_named(run) for run in runs]
    ids = {server.device_id(first): str(first), server.device_id(second): str(second)}
    assert named[0][0] == named[1][0] == ids, "results.json: the same id for the same drive"
    assert named[0][2] == named[1][2] == ids, "the database: the same id for the same drive"
    assert named[0][1] == named[1][1], "the same test ids per drive, with -n and without"
    for dut_id, node in ids.items():
        assert len(named[0][1][node]) == CORNERS
        assert all(f"[{dut_id}-" in test for test in named[0][1][node]), named[0][1]


def test_a_run_resumed_with_the_options_swapped_keeps_each_drives_tests(
    loop_device: LoopFactory, tmp_path: Path
) -> None:
    first, second = loop_device(256), loop_device(256)
    reports = tmp_path / "reports"
    with _named_disk(tmp_path / "links", first, second) as (a, b):
        confirm = (f"--ssd-confirm={first}", f"--ssd-confirm={second}")
        suite = (str(SMOKE),)
        recorded = "SELECT count(*) FROM tests"
        _stopped(
            str(a),
            reports,
            lambda log: _rows(reports, recorded) >= 2,
            signal.SIGKILL,
            f"--dut={b}",
            *confirm,
            suite=suite,
        )
        with contextlib.closing(sqlite3.connect(reports / "results.sqlite")) as db:
            before = dict(db.execute("SELECT nodeid, outcome FROM tests").fetchall())
        assert 2 <= len(before) < 2 * CORNERS, before
        # swapped: the kept tests are each drive's own, the others run
        done = exited(
            _argv(str(b), reports, f"--dut={a}", *confirm, "--ssd-resume=last", suite=suite),
            pytest.ExitCode.OK,
        )
    assert f"{len(before)} test(s) it finished are kept as recorded" in done.stdout, done.stdout
    with contextlib.closing(sqlite3.connect(reports / "results.sqlite")) as db:
        tests = dict(db.execute("SELECT nodeid, outcome FROM tests").fetchall())
        runs = db.execute("SELECT id, complete FROM runs").fetchall()
        devices = dict(db.execute("SELECT dut_id, description FROM run_devices").fetchall())
        measured = db.execute("SELECT test, dut_id FROM measurements").fetchall()
    assert len(runs) == 1 and runs[0][1] == 1, runs
    nodes = {dut_id: json.loads(text)["identity"]["path"] for dut_id, text in devices.items()}
    assert nodes == {first.name: str(first), second.name: str(second)}
    assert len(tests) == 2 * CORNERS and set(tests.values()) == {"passed"}, tests
    assert all(before[nodeid] == tests[nodeid] for nodeid in before), "kept as recorded"
    assert len(measured) == 2 * CORNERS, "each test measured once: none again on the other"
    assert all(f"[{dut_id}-" in test for test, dut_id in measured), measured
