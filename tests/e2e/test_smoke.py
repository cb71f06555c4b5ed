"""suites/smoke end to end: real plugin, real fio, real (loop) devices."""

from __future__ import annotations

import re
from collections import defaultdict
from html import unescape
from pathlib import Path
from typing import Any

from tests.e2e.conftest import attached_loops

CORNERS = ("seq-read", "seq-write", "rnd-read", "rnd-write")


def test_smoke_on_scratch_measures_records_and_reports(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:256M")
    run.result.assert_outcomes(passed=4)
    out = run.result.stdout.str()
    assert "these results describe no SSD" in out
    assert f"report:  {run.run_dir}/report.html" in out
    # the report's build says where it is (a line per section) before pytest's summary
    assert "pytest-ssd: report: Four corners (suites/smoke) (" in out

    data = run.results()
    assert data["run"]["complete"] is True
    assert data["run"]["outcome"] == {"passed": 4}
    assert data["run"]["fio"].startswith("fio-")
    assert data["devices"]["scratch"]["scratch"] is True
    assert data["devices"]["scratch"]["identity"]["size_bytes"] == 256 << 20
    by_name = {m["name"]: m for m in data["measurements"]}
    assert set(by_name) == set(CORNERS), "prefill is not a measurement"
    for name, m in by_name.items():
        direction = "read" if name.endswith("read") else "write"
        assert list(m["metrics"]) == [direction]
        metrics = m["metrics"][direction]
        assert metrics["iops"] > 0 and metrics["bw_mib_s"] > 0
        assert abs(metrics["bw_mb_s"] / metrics["bw_mib_s"] - 1.048576) < 1e-6
        assert (run.run_dir / m["artifacts"] / "fio.job").is_file()
        assert (run.run_dir / m["artifacts"] / "fio.rc").read_text().strip() == "0"

    html = (run.run_dir / "report.html").read_text()
    assert "Devices under test" in html and "describe no SSD" in html
    assert html.count("data:image/png;base64") >= 1, "summary chart embedded"
    assert "tail latency" in html, "per-test graphs embedded"
    assert "MiB/s" in html and "p99.99 latency" in html
    # each test's row links the job file fio ran and what it printed
    rows = unescape(html)  # pytest-html keeps its rows in a JSON blob, in an attribute
    links = set(re.findall(r'href=\\?"(artifacts/[^"\\]+/fio\.(?:job|stdout))', rows))
    assert len(links) == 2 * len(CORNERS), links
    assert all((run.run_dir / link).is_file() for link in links)
    assert str(run.run_dir.parent) not in attached_loops(), "scratch device detached"
    assert not list((run.report_dir / ".scratch").glob("*.img")), "backing file removed"


def test_two_devices_under_xdist_each_pinned_to_one_worker(run_ssd: Any) -> None:
    run = run_ssd("--dut=scratch:128M", "--dut=scratch:128M", "-n", "2", "-v")
    run.result.assert_outcomes(passed=8)
    workers: dict[str, set[str]] = defaultdict(set)
    for line in run.result.outlines:
        match = re.search(r"\[(gw\d+)\].*PASSED .*\[(scratch(?:-2)?)-", line)
        if match:
            workers[match.group(2)].add(match.group(1))
    assert set(workers) == {"scratch", "scratch-2"}
    assert all(len(gws) == 1 for gws in workers.values()), workers
    data = run.results()
    assert len(data["measurements"]) == 8
    assert {m["device"] for m in data["measurements"]} == {"scratch", "scratch-2"}
    # each test's id as a run without -n gives it (xdist's loadgroup ended it in @dut-…)
    ids = {m["test"].partition("::")[2] for m in data["measurements"]}
    assert ids == {f"test_four_corners[{d}-{c}]" for d in ("scratch", "scratch-2") for c in CORNERS}
    assert not [line for line in run.result.outlines if "@dut" in line]
    assert (run.run_dir / "report.html").read_text().count("tail latency") >= 8
    assert str(run.report_dir) not in attached_loops()


def test_named_loop_device_with_confirmation(run_ssd: Any, loop_device: Any) -> None:
    dev: Path = loop_device(128)
    run = run_ssd(f"--dut={dev}", f"--ssd-confirm={dev}", "-k", "rnd")
    run.result.assert_outcomes(passed=2)
    data = run.results()
    assert data["devices"][dev.name]["path"] == str(dev)
    assert {m["name"] for m in data["measurements"]} == {"rnd-read", "rnd-write"}


def test_a_second_run_reads_the_span_as_the_first_did(run_ssd: Any, loop_device: Any) -> None:
    """Two runs of one drive measure the same thing: what a run knows it wrote (the written
    map) is its own, so each run's read corner reads a span its prefill wrote sequentially
    just before, in the same fio process, and never data the first run's random-write
    corner left (another state on an SSD: a baseline would compare two states)."""
    dev: Path = loop_device(128)
    argv = (f"--dut={dev}", f"--ssd-confirm={dev}", "-k", "seq-read or rnd-write")
    jobs = []
    for _ in range(2):
        run = run_ssd(*argv)
        run.result.assert_outcomes(passed=2)
        (read,) = [m for m in run.results()["measurements"] if m["name"] == "seq-read"]
        jobs.append((run.run_dir / read["artifacts"] / "fio.job").read_text())
    for job in jobs:
        sections = re.findall(r"^\[([^\]]+)\]", job, re.MULTILINE)
        assert sections[-2:] == ["prefill", "seq-read"], sections
        assert "rw=write" in job.split("[prefill]")[1].split("[seq-read]")[0]
