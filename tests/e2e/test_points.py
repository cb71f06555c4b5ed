"""A test per benchmark point: collection lists the points, ``-k`` picks them, junit has each."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_ssd.fio.batch import AHEAD
from pytest_ssd.fio.results import parse_output
from tests.e2e.conftest import REPO, attached_loops

CSD = REPO / "suites" / "csd"
ESD = REPO / "suites" / "esd"


def collected(run: Any, test: str) -> list[str]:
    return re.findall(rf"::{test}\[([^\]]+)\]", run.result.stdout.str())


def test_collect_only_lists_every_low_qd_point_per_profile(run_ssd: Any) -> None:
    quick = collected(run_ssd("--collect-only", "-q", suite=CSD), "test_low_qd")
    assert len(quick) == 2 * 2 * 3 * 3 and len(set(quick)) == len(quick)
    assert quick[:4] == [
        "scratch-seq-cssd1-qd1-r0",
        "scratch-seq-cssd1-qd1-r70",
        "scratch-seq-cssd1-qd1-r100",
        "scratch-seq-cssd1-qd2-r0",
    ], "the method's order: QD ascending, read share ascending"
    full = collected(
        run_ssd("--collect-only", "-q", "--ssd-profile=full", suite=CSD), "test_low_qd"
    )
    assert len(full) == 2 * 2 * 3 * 11, "the full matrix: read share 0 ... 100 % by 10"
    assert "scratch-rnd-cssd2-qd4-r30" in full and "scratch-rnd-cssd2-qd4-r30" not in quick
    lines = collected(run_ssd("--collect-only", "-q", suite=CSD), "test_quick_profiles")
    assert len(lines) == 4 * 16 and lines[0] == "scratch-fob-default-seq1m-q8t1-read"
    esd = run_ssd("--collect-only", "-q", suite=ESD).result.stdout.str()
    for name in (
        "test_rnd_by_qd[scratch-read-qd32t4]",
        "test_seq_by_block_size[scratch-write-64KiB]",
    ):
        assert name in esd


def test_k_runs_the_chosen_points_in_their_states_with_junit_per_point(
    run_ssd: Any, tmp_path: Path
) -> None:
    junit = tmp_path / "junit.xml"
    run = run_ssd("--dut=scratch:1G", "-k", "qd1 and r70", f"--junitxml={junit}", suite=CSD)
    run.result.assert_outcomes(passed=4)
    cases = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ET.parse(junit).getroot().iter("testcase")
    }
    assert sorted(cases) == sorted(
        f"test_low_qd[scratch-{pattern}-cssd{n}-qd1-r70]"
        for pattern in ("seq", "rnd")
        for n in (1, 2)
    )
    for name, props in cases.items():
        job = f"{name.split('-')[1]}-q1-r070-n"
        # every repetition's figures, reads and writes, as properties of the point's testcase
        assert {f"{job}{rep}.read.iops" for rep in range(3)} <= set(props), name
        assert float(props[f"{job}0.write.bw_mib_s"]) > 0
        assert float(props["lowqd-point.trimmed_mib_s"]) > 0
    data = run.results()
    assert [t["target"] for t in data["transitions"]] == ["cssd"], "the state the points need"
    # the first round's batch started during the transition (scratch is fresh out of the
    # box: no purge), its first fio's start-up overlapping the transition's steps
    began, reached = (
        datetime.fromisoformat(data["transitions"][0][key]).timestamp() for key in ("start", "end")
    )
    jobfiles = list(run.run_dir.glob("artifacts/batch-*/*/fio.job"))
    assert began < min(p.stat().st_mtime for p in jobfiles) < reached
    # the two points of each round started together, a fio process each, released one
    # after the other (no warning when the batch closed)
    processes = sorted((run.run_dir / "artifacts").glob("batch-*/*/fio.stdout"))
    assert len(processes) == 4 and len({p.parent.parent for p in processes}) == 2
    assert {m["artifacts"].split("/", 1)[1] for m in data["measurements"]} == {
        str(p.parent.relative_to(run.run_dir / "artifacts")) for p in processes
    }
    assert "fio batch failed" not in run.result.stdout.str()
    html = (run.run_dir / "report.html").read_text()
    assert "8 of 9 points not measured (gaps in the curves)" in html
    assert "not ranked in SEQ 128KiB, cssd, round 1" in html
    assert str(run.report_dir) not in attached_loops()


ESD_SHEET = """
[drive]
name = "scratch"
model = ["*"]
capacity_gb = 1

[[specs]]
id = "rnd-read-qd32x4"
metric = "iops"
unit = "IOPS"
pattern = "rnd"
direction = "read"
block_size = "4KiB"
qd = 32
jobs = 4
state = "ss(rnd-4k-write-qd256)"
value = 100
kind = "ceiling"

[[specs]]
id = "seq-read-qd8"
metric = "throughput"
unit = "MB/s"
pattern = "seq"
direction = "read"
block_size = "128KiB"
qd = 8
state = "fob"
value = 1
kind = "ceiling"
"""


def test_a_datasheet_line_is_checked_in_the_point_that_measures_it(
    run_ssd: Any, tmp_path: Path
) -> None:
    sheet = tmp_path / "sheet.toml"
    sheet.write_text(ESD_SHEET)
    run = run_ssd(
        "--dut=scratch:1G",
        f"--datasheet={sheet}",
        "--datasheet-force",
        "-rs",
        "-k",
        "read-qd32t4 or spec_line",
        str(REPO / "suites" / "datasheet"),
        suite=ESD,
        timeout=600,
    )
    # the RND 4 workers x QD32 read point checks rnd-read-qd32x4; its own test is skipped,
    # saying where; seq-read-qd8 (FOB: no esd point measures there) keeps its own test
    run.result.assert_outcomes(passed=2, skipped=1)
    run.result.stdout.fnmatch_lines(
        ["*rnd-read-qd32x4: measured and checked in test_qd_and_block_size.py::test_rnd_by_qd*"]
    )
    verdicts = {v["id"]: v for v in run.results()["conformance"]}
    assert set(verdicts) == {"rnd-read-qd32x4", "seq-read-qd8"}
    assert verdicts["rnd-read-qd32x4"]["verdict"] == "met"
    assert "test_rnd_by_qd[scratch-read-qd32t4]" in verdicts["rnd-read-qd32x4"]["test"]
    assert "test_spec_line" in verdicts["seq-read-qd8"]["test"]
    assert str(run.report_dir) not in attached_loops()


def test_no_batch_runs_each_point_in_its_own_fio_process(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:1G", "-k", "qd1 and r70 and cssd1", "--ssd-no-batch", suite=CSD)
    run.result.assert_outcomes(passed=2)
    artifacts = run.run_dir / "artifacts"
    assert not list(artifacts.glob("batch-*"))
    assert len(list(artifacts.glob("*/*/fio.stdout"))) == 2, "a fio process per point"


def test_each_points_figures_are_its_own_fio_processs_json(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:1G", "-k", "qd1 and (r0 or r70)", suite=CSD)
    run.result.assert_outcomes(passed=8)
    artifacts = run.run_dir / "artifacts"
    # a batch per round (its SEQ and RND points), a fio process per point, no per-I/O log
    processes = sorted(artifacts.glob("batch-*/*/fio.stdout"))
    assert len(processes) == 8 and len(list(artifacts.glob("batch-*"))) == 2
    assert not list(artifacts.glob("batch-*/**/*.log"))
    measured = run.results()["measurements"]
    assert len(measured) == 8 * 3
    for process in processes:
        output = parse_output(process.read_text())
        mine = [
            m
            for m in measured
            if m["artifacts"].endswith(str(process.parent.relative_to(artifacts)))
        ]
        assert sorted(m["name"] for m in mine) == sorted(job.name for job in output.jobs)
        for m in mine:
            for direction, done in output.job(m["name"]).directions.items():
                if done.io_bytes:
                    assert m["metrics"][direction] == done.as_dict(), m["name"]
    assert "fio batch failed" not in run.result.stdout.str()
    assert str(run.report_dir) not in attached_loops()


PROBE = """
import json, os
from pathlib import Path
import pytest

def _count():
    path = Path(os.environ["SSD_PROBE_RESULTS"])
    if not path.exists():
        return -1
    return len(json.loads(path.read_text())["measurements"])

@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    seen = _count()
    result = yield
    with open(os.environ["SSD_PROBE_LOG"], "a") as log:
        log.write(json.dumps([item.name, "setup", seen]) + "\\n")
    return result

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    with open(os.environ["SSD_PROBE_LOG"], "a") as log:
        log.write(json.dumps([item.name, "call", _count()]) + "\\n")
    return result
"""


def test_results_json_is_exported_while_a_batched_points_fio_exits(
    run_ssd: Any, pytester: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    # a probe plugin counts results.json's measurements as each point test starts and
    # as its call ends: the export waits for the next point's fio exit, not its tear-down
    pytester.makepyfile(ssd_probe=PROBE)
    log = tmp_path / "probe.jsonl"
    monkeypatch.setenv("SSD_PROBE_RESULTS", str(tmp_path / "reports" / "latest" / "results.json"))
    monkeypatch.setenv("SSD_PROBE_LOG", str(log))
    run = run_ssd("--dut=scratch:1G", "-p", "ssd_probe", "-k", "cssd1 and rnd and r70", suite=CSD)
    run.result.assert_outcomes(passed=3)
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    setups = [n for name, when, n in seen if when == "setup"]
    calls = [n for name, when, n in seen if when == "call"]
    # no export between two point tests: a point starts with what the call before it left
    assert setups[1:] == calls[:-1], seen
    # a later point's call exports the points before it (3 repetitions each) while its
    # fio exits (unless the last export was too recent: at most 8 % of the time)
    grown = [c - s for s, c in zip(setups[1:], calls[1:], strict=True)]
    assert set(grown) <= {0, 3, 6} and max(grown) > 0, seen
    assert len(run.results()["measurements"]) == 3 * 3


FAIL_ONCE = """
from pytest_ssd.errors import SsdError
from pytest_ssd.state import actions

_discard, _failed = actions.discard, []


def discard(*args, **kwargs):
    if not _failed:  # the first transition fails at its trim, after its purge
        _failed.append(True)
        raise SsdError("injected: the trim failed")
    return _discard(*args, **kwargs)


actions.discard = discard
"""


def test_a_transition_that_fails_after_its_batch_started_kills_that_batch(
    run_ssd: Any, pytester: Any
) -> None:
    pytester.makepyfile(ssd_fail_once=FAIL_ONCE)
    run = run_ssd(
        "--dut=scratch:1G", "-p", "ssd_fail_once", "-k", "cssd1 and rnd and r70", suite=CSD
    )
    run.result.assert_outcomes(passed=2, errors=1)
    assert "injected: the trim failed" in run.result.stdout.str()
    # the first point's batch started during the transition that failed, and was
    # killed with it: the next point's transition started a batch of its own
    batches = sorted(p.name for p in (run.run_dir / "artifacts").glob("batch-*"))
    assert len(batches) == 2 and "qd1" in batches[0] and "qd2" in batches[1], batches
    killed = [
        parse_output(p.read_text())
        for p in (run.run_dir / "artifacts" / batches[0]).glob("*/fio.stdout")
    ]
    assert len(killed) == AHEAD, "the processes started ahead"
    assert all(job.io_bytes == 0 for output in killed for job in output.jobs), "ended without I/O"
    measured = run.results()["measurements"]
    assert len(measured) == 2 * 3 and all(batches[1] in m["artifacts"] for m in measured)
    assert "fio batch failed" not in run.result.stdout.str()
