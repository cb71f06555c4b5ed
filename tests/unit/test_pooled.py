"""Percentiles over repeats and runs: fio's latency histograms pooled, never averaged.

Golden output: two one-second runs of one random-read job by real fio with
``--output-format=json+`` (tests/golden/fio/README.md: ``repeat_1.json``, ``repeat_2.json``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_ssd.analysis.repeat import aggregate
from pytest_ssd.db.model import DriveRef, DriveResults
from pytest_ssd.fio.results import JobResult, parse_output, pooled, pooled_percentiles
from pytest_ssd.report.sections.match import Matched
from pytest_ssd.report.sections.workloads import value_of
from pytest_ssd.results.record import Derived, Measurement

GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
TEST = "suites/x/test_x.py::test_rnd[d0]"


def _job(n: int) -> JobResult:
    return parse_output((GOLDEN / f"repeat_{n}.json").read_text()).jobs[0]


def _bins(job: JobResult) -> tuple[tuple[int, int], ...]:
    clat = job.directions["read"].clat
    assert clat is not None and clat.bins
    return clat.bins


def _nearest_rank(latencies: np.ndarray, p: float) -> float:
    """The p-th percentile of every I/O, sorted one by one: what pooling must give."""
    rank = int(np.ceil(p / 100 * len(latencies)))
    return float(np.sort(latencies)[rank - 1]) / 1000


def _measurement(job: JobResult, repeat: int) -> Measurement:
    return Measurement(
        test=TEST,
        device="d0",
        name="rnd",
        workload={"pattern": "rnd", "repeat": repeat},
        metrics={d: r.as_dict() for d, r in job.directions.items()},
        start="",
        end="",
        artifacts="",
    )


def test_pooled_percentiles_are_those_of_every_io_together() -> None:
    runs = [_bins(_job(1)), _bins(_job(2))]
    every = np.concatenate([np.repeat([ns for ns, _ in b], [c for _, c in b]) for b in runs])
    assert sum(c for _, c in pooled(runs)) == len(every) > 400_000
    found = pooled_percentiles(runs, [50.0, 99.0, 99.9])
    for p in (50.0, 99.0, 99.9):
        assert found[p] == _nearest_rank(every, p)
    own = [pooled_percentiles([b], [99.0])[99.0] for b in runs]
    assert all(v is not None for v in own)
    assert found[99.0] != sum(v for v in own if v is not None) / 2  # the mean is not p99


def test_repeats_aggregate_to_the_pooled_percentile_and_the_report_shows_it() -> None:
    jobs = [_job(1), _job(2)]
    runs = [_measurement(job, n) for n, job in enumerate(jobs, start=1)]
    spread = aggregate(runs, histograms={"read": [_bins(job) for job in jobs]})
    p99 = spread["read"]["p99_us"]
    assert p99["pooled"] == pooled_percentiles([_bins(j) for j in jobs], [99.0])[99.0]
    assert p99["pooled"] != p99["mean"] and p99["n"] == 2
    drive = DriveResults(DriveRef("run-1", "d0", "drive"), measurements=runs)
    drive.derived.append(Derived(test=TEST, device="d0", name="rnd.repeat", values=spread))
    value, sd = value_of(Matched(drive, runs[-1]), "read", "p99_us")
    assert value == p99["pooled"] and sd == pytest.approx(p99["sd"])
    # without the histograms (a run before them): the mean, as before
    plain = aggregate(runs)
    assert "pooled" not in plain["read"]["p99_us"]
