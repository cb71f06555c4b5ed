"""fio json+ output parsed into typed results, checked against golden output of the real fio."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ssd.errors import ParseError
from pytest_ssd.fio.results import (
    DEFAULT_PERCENTILES,
    DirectionResult,
    FioOutput,
    Latency,
    Percentile,
    parse_output,
    percentiles_from_bins,
)

GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
WITH_BINS = [
    "randread_4k_qd32.json",
    "randrw_70_30_qd1.json",
    "two_jobs_stonewall.json",
    "small_sample.json",
    "null_2000_ios.json",
    "note_before_json.json",
    "client_server.json",
    "client_status_one_job.json",
    "client_status_two_jobs.json",
]
STEADYSTATE = [
    "ss_bw_slope_attained.json",
    "ss_bw_slope_not_attained.json",
    "ss_iops_deviation_attained.json",
]


def golden_text(name: str) -> str:
    return (GOLDEN / name).read_text()


def golden(name: str) -> FioOutput:
    return parse_output(golden_text(name))


def golden_raw(name: str) -> dict[str, Any]:
    text = golden_text(name)
    doc: dict[str, Any] = json.loads(text[text.index("{") :])
    return doc


def clats(output: FioOutput) -> list[Latency]:
    return [d.clat for j in output.jobs for d in j.directions.values() if d.clat is not None]


def minimal_doc(**read: object) -> str:
    """A one-job fio document with a read direction made of ``read``."""
    job = {"jobname": "j", "error": 0, "elapsed": 1, "usr_cpu": 1.0, "sys_cpu": 2.0, "read": read}
    return json.dumps({"fio version": "fio-3.33", "jobs": [job]})


def _nearest_rank(bins: tuple[tuple[int, int], ...], p: float) -> int:
    """An independent nearest rank: every I/O in order, the ceil(p/100 * N)-th, p in decimal."""
    values = sorted(v for v, n in bins for _ in range(n))
    rank = math.ceil(Decimal(repr(p)) / 100 * len(values))
    return values[max(rank, 1) - 1]


def _whole(p: float, total: int) -> bool:
    return (Decimal(repr(p)) / 100 * total) % 1 == 0


@pytest.mark.parametrize("name", WITH_BINS)
def test_percentiles_from_bins_are_nearest_rank_and_fios_off_whole_ranks(name: str) -> None:
    compared = 0
    for clat in clats(golden(name)):
        assert sum(count for _, count in clat.bins) == clat.samples
        for p, fio_ns in clat.fio_percentiles.items():
            assert clat.percentile(p).ns == _nearest_rank(clat.bins, p), f"p{p} in {name}"
            if not _whole(p, clat.samples):  # where p/100 * N is whole, fio is one rank up
                assert clat.percentile(p).ns == fio_ns, f"p{p} in {name}"
            compared += 1
        ours = percentiles_from_bins(clat.bins, list(clat.fio_percentiles))
        assert [q.ns for q in ours] == [_nearest_rank(clat.bins, p) for p in clat.fio_percentiles]
    assert compared >= 14


def test_small_sample_hits_the_threshold_exactly_and_still_matches_fio() -> None:
    clat = golden("small_sample.json").job("small").directions["read"].clat
    assert clat is not None and clat.samples == 50
    values = [v for v, _ in clat.bins]
    cumulative = dict(zip(values, accumulate(n for _, n in clat.bins), strict=True))
    # p30 of 50 needs 15 I/Os and p60 needs 30: a bucket ends exactly there, so fio
    # stops on it, not on the next one
    assert cumulative[clat.percentile(30).ns] == 15
    assert cumulative[clat.percentile(60).ns] == 30
    assert clat.percentile(30).ns == clat.fio_percentiles[30.0]


def test_at_whole_ranks_value_and_resolution_agree_on_the_decimal_p() -> None:
    clat = golden("null_2000_ios.json").jobs[0].directions["read"].clat
    assert clat is not None and clat.samples == 2000
    values = sorted(v for v, n in clat.bins for _ in range(n))
    # 2000 x (1 - p/100) is whole for p99.95 (1 I/O beyond) and p99.9 (2 beyond): nearest
    # rank takes the 1999th and 1998th I/O, and both are resolved
    p9995, p999 = clat.percentile(99.95), clat.percentile(99.9)
    assert (p9995.ns, p9995.resolved) == (values[1998], True)
    assert (p999.ns, p999.resolved) == (values[1997], True)
    assert p9995.ns != values[-1], "not the single slowest I/O"
    # fio's binary 99.95 lands on the slowest I/O and its 99.9 one rank up: documented gap
    assert clat.fio_percentiles[99.95] == values[-1] and clat.fio_percentiles[99.9] == values[1998]
    # p99.99 of 2,000 would need 10,000 I/Os: the slowest I/O, and not resolved
    assert clat.percentile(99.99) == Percentile(99.99, values[-1], False)


@pytest.mark.parametrize("name", WITH_BINS)
def test_percentiles_are_monotonic_bin_values(name: str) -> None:
    for clat in clats(golden(name)):
        values = [q.ns for q in clat.percentiles()]
        assert values == sorted(values)
        assert set(values) <= {v for v, _ in clat.bins}
        assert clat.percentiles() == percentiles_from_bins(clat.bins, DEFAULT_PERCENTILES)


def test_small_sample_leaves_high_percentiles_unresolved() -> None:
    clat = golden("small_sample.json").job("small").directions["read"].clat
    assert clat is not None
    resolved = {q.p: q.resolved for q in clat.percentiles()}
    # 50 I/Os: 50 * (1 - p/100) >= 1 up to p98
    assert resolved == {p: p <= 98 for p in DEFAULT_PERCENTILES}


@pytest.mark.parametrize(
    ("total", "p", "resolved"),
    [
        (100_000, 99.999, True),
        (99_999, 99.999, False),
        (10_000, 99.99, True),
        (9_999, 99.99, False),
        (2_000, 99.95, True),
        (1_999, 99.95, False),
        (100, 99.0, True),
        (99, 99.0, False),
        (1, 50.0, False),
        (2, 50.0, True),
    ],
)
def test_resolved_needs_one_io_at_or_beyond_the_percentile(
    total: int, p: float, resolved: bool
) -> None:
    (q,) = percentiles_from_bins([(1000, total - 1), (2000, 1)], [p])
    assert q.resolved is resolved


def test_percentiles_from_bins_takes_the_first_bucket_reaching_p() -> None:
    bins = [(300, 1), (100, 2), (200, 1)]  # unsorted on purpose
    got = percentiles_from_bins(bins, [25, 50, 50.1, 75, 75.1, 100])
    assert [q.ns for q in got] == [100, 100, 200, 200, 300, 300]
    assert [q.p for q in got] == [25.0, 50.0, 50.1, 75.0, 75.1, 100.0]


def test_percentiles_from_bins_refuses_empty_bins_and_bad_p() -> None:
    with pytest.raises(ParseError, match="no completion-latency samples"):
        percentiles_from_bins([], [50])
    with pytest.raises(ValueError, match="outside"):
        percentiles_from_bins([(100, 1)], [0])
    with pytest.raises(ValueError, match="outside"):
        percentiles_from_bins([(100, 1)], [100.5])


@pytest.mark.parametrize("name", ["randrw_70_30_qd1.json", "two_jobs_stonewall.json"])
def test_direction_values_equal_the_json(name: str) -> None:
    output, raw = golden(name), golden_raw(name)
    assert len(output.jobs) == len(raw["jobs"])
    for job, raw_job in zip(output.jobs, raw["jobs"], strict=True):
        assert job.name == raw_job["jobname"]
        active = [d for d in ("read", "write", "trim") if raw_job[d]["total_ios"] > 0]
        assert sorted(job.directions) == sorted(active)
        for direction, result in job.directions.items():
            data = raw_job[direction]
            assert result.direction == direction
            assert result.io_bytes == data["io_bytes"] > 0
            assert result.total_ios == data["total_ios"]
            assert result.iops == data["iops"]
            assert result.bw_bytes_s == data["bw_bytes"]
            assert result.runtime_ms == data["runtime"]
            assert result.lat_mean_ns == data["lat_ns"]["mean"]
            assert result.slat_mean_ns == data["slat_ns"]["mean"]
            assert result.clat is not None and result.clat.samples == data["clat_ns"]["N"]
            assert result.bw_mib_s * 2**20 == pytest.approx(data["bw_bytes"])
        assert job.io_bytes == sum(raw_job[d]["io_bytes"] for d in active)
        # options given before the first --name are fio's "global options"
        assert job.options == {**raw.get("global options", {}), **raw_job["job options"]}
        assert job.usr_cpu == raw_job["usr_cpu"] and job.elapsed_s == raw_job["elapsed"]


def test_randrw_has_both_directions_in_its_mix() -> None:
    job = golden("randrw_70_30_qd1.json").job("randrw")
    reads, writes = job.directions["read"].total_ios, job.directions["write"].total_ios
    assert 0.6 < reads / (reads + writes) < 0.8
    assert job.options["rwmixread"] == "70"


def test_bandwidth_in_mib_and_mb() -> None:
    result = DirectionResult("read", 0, 1, 1000, 1.0, 1_048_576_000.0, None, None, None)
    assert result.bw_mib_s == 1000.0
    assert result.bw_mb_s == 1048.576


def test_as_dict_is_json_and_in_microseconds() -> None:
    read = golden("randread_4k_qd32.json").job("randread").directions["read"]
    assert read.clat is not None and read.lat_mean_ns is not None
    summary = read.as_dict()
    assert json.loads(json.dumps(summary)) == summary
    assert summary["runtime_s"] == read.runtime_ms / 1000
    assert summary["lat_mean_us"] == pytest.approx(read.lat_mean_ns / 1000)
    assert summary["bw_mb_s"] == read.bw_bytes_s / 1e6
    clat = summary["clat"]
    assert isinstance(clat, dict) and "bins" not in clat
    assert clat["max_us"] == read.clat.max_ns / 1000
    p99 = read.clat.percentile(99)
    assert {"p": 99.0, "us": p99.ns / 1000, "resolved": True} in clat["percentiles"]
    assert len(clat["percentiles"]) == len(DEFAULT_PERCENTILES)


def test_plain_json_falls_back_to_fios_own_percentiles() -> None:
    clat = golden("plain_json.json").job("plain").directions["read"].clat
    assert clat is not None and clat.bins == ()
    assert clat.percentile(99.9).ns == clat.fio_percentiles[99.9]
    assert clat.percentile(99.9).resolved is (clat.samples >= 1000)
    with pytest.raises(ParseError, match=r"no p99\.999 .*json\+"):
        clat.percentile(99.999)
    listed = clat.as_dict()["percentiles"]
    assert isinstance(listed, list)
    assert [q["p"] for q in listed] == sorted(clat.fio_percentiles)


def test_notes_before_the_json_are_kept() -> None:
    output = golden("note_before_json.json")
    assert output.notes.startswith("note: both iodepth >= 1 and synchronous I/O engine")
    assert golden("randread_4k_qd32.json").notes == ""
    read = output.job("note").directions["read"]
    # psync submits and completes in one call: fio has no slat samples for it
    assert read.slat_mean_ns is None and read.lat_mean_ns is not None


def test_brace_in_a_note_and_text_after_the_json() -> None:
    text = "fio: odd note {x}\n" + minimal_doc(**_READ) + "\ntrailing line\n"
    output = parse_output(text)
    assert output.notes == "fio: odd note {x}\ntrailing line"
    assert output.job("j").directions["read"].io_bytes == 4096


def test_failed_job_has_error_and_no_directions() -> None:
    job = golden("failed_job.json").job("failed")
    assert job.error == 21
    assert job.directions == {} and job.io_bytes == 0


def test_client_server_output_without_the_all_clients_sum() -> None:
    output, raw = golden("client_server.json"), golden_raw("client_server.json")
    assert "jobs" not in raw and raw["client_stats"][-1]["jobname"] == "All clients"
    assert [(j.name, j.host) for j in output.jobs] == [("cs", "127.0.0.1")] * 2
    ios = [j.directions["read"].total_ios for j in output.jobs]
    assert ios == [c["read"]["total_ios"] for c in raw["client_stats"][:2]]
    assert output.jobs[0].elapsed_s == raw["client_stats"][0]["job_runtime"] / 1000
    assert output.notes.startswith("<vm> cs: (g=0)")


def test_a_client_runs_status_reports_are_not_its_result() -> None:
    # fio --client --status-interval: every status report goes into client_stats first
    raw = golden_raw("client_status_one_job.json")
    reports = [c["read"]["io_bytes"] for c in raw["client_stats"]]
    assert len(reports) == 6 and reports == sorted(reports), "5 status reports, then the result"
    (job,) = golden("client_status_one_job.json").jobs
    assert job.directions["read"].io_bytes == reports[-1] == 2_116_988_928
    assert job.elapsed_s == 5.0, "the 5 s job's own run time, not the first report's 1 s"


def test_a_job_not_started_at_a_status_report_is_not_said_to_have_done_no_io() -> None:
    raw = golden_raw("client_status_two_jobs.json")
    names = [c["jobname"] for c in raw["client_stats"]]
    assert names == ["a", "b", "All clients", "a", "b", "a", "b"]
    assert raw["client_stats"][1]["read"]["io_bytes"] == 0, "b had not started yet"
    output = golden("client_status_two_jobs.json")
    assert [j.name for j in output.jobs] == ["a", "b"]
    assert output.job("a").directions["write"].io_bytes == 1 << 30
    assert output.job("b").directions["read"].io_bytes == 1 << 30


def test_run_wide_fields() -> None:
    output, raw = golden("randread_4k_qd32.json"), golden_raw("randread_4k_qd32.json")
    assert output.fio_version == "fio-3.33"
    assert list(output.disk_util) == raw["disk_util"]
    assert output.job("randread").host == ""
    with pytest.raises(ParseError, match=r"no job 'nope' \(jobs: 'randread'\)"):
        output.job("nope")


_READ: dict[str, object] = {
    "io_bytes": 4096,
    "total_ios": 1,
    "runtime": 1,
    "iops": 1000.0,
    "bw_bytes": 4096000,
    "clat_ns": {"min": 900, "max": 900, "mean": 900.0, "stddev": 0.0, "N": 1, "bins": {"896": 1}},
}


def test_counters_given_as_strings_and_options_merged() -> None:
    big = str(2**128 - 1)
    doc = json.loads(minimal_doc(**{**_READ, "io_bytes": big, "total_ios": "1"}))
    doc["global options"] = {"bs": "4k", "rw": "read"}
    doc["jobs"][0]["job options"] = {"rw": "randread"}
    job = parse_output(json.dumps(doc)).job("j")
    assert job.directions["read"].io_bytes == 2**128 - 1
    assert job.options == {"bs": "4k", "rw": "randread"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "fio printed nothing"),
        (" \n", "fio printed nothing"),
        ("fio: unrecognized option '--bogus'\n", 'fio printed no JSON: "fio: unrecognized option'),
        ('{"jobs": [}', "not valid JSON"),
        ('{"fio version": "fio-3.33"}', "no 'jobs' or 'client_stats'"),
        (
            minimal_doc(**{**_READ, "io_bytes": "lots"}),
            r"jobs\[0\] 'j'\.read: 'io_bytes' is not a number",
        ),
        (minimal_doc(**{**_READ, "runtime": None}), "'runtime' is not a number: None"),
    ],
)
def test_bad_output_raises_a_one_line_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        parse_output(text)
    assert "\n" not in str(caught.value)


def test_truncated_golden_output_is_invalid_json_quoting_what_fio_printed() -> None:
    text = golden_text("note_before_json.json")
    with pytest.raises(ParseError, match=r"not valid JSON.*'note: both iodepth") as caught:
        parse_output(text[: len(text) // 2])
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.parametrize("name", STEADYSTATE)
def test_steadystate_values_equal_the_json(name: str) -> None:
    state = golden(name).jobs[0].steadystate
    raw = golden_raw(name)["jobs"][0]["steadystate"]
    assert state is not None
    assert f"{state.kind}:{state.limit:f}{'%' if state.percent else ''}" == raw["ss"]
    assert state.duration_s == raw["duration"] == 5
    assert state.attained is bool(raw["attained"])
    assert state.criterion == float(raw["criterion"].removesuffix("%"))
    assert state.slope == raw["slope"] and state.max_deviation == raw["max_deviation"]
    assert list(state.bw_bytes_s) == raw["data"]["bw"] and len(state.bw_bytes_s) == 5
    assert list(state.iops) == raw["data"]["iops"]
    assert state.bw_mean_bytes_s == raw["data"]["bw_mean"]
    assert state.iops_mean == raw["data"]["iops_mean"]


@pytest.mark.parametrize(
    ("name", "attained", "limit", "criterion"),
    [
        ("ss_bw_slope_attained.json", True, 10.0, -3.681465),
        ("ss_bw_slope_not_attained.json", False, 0.01, 0.613219),
    ],
)
def test_steadystate_bw_slope_attained_or_not(
    name: str, attained: bool, limit: float, criterion: float
) -> None:
    state = golden(name).jobs[0].steadystate
    assert state is not None and state.kind == "bw_slope" and state.is_slope
    assert (state.attained, state.limit, state.criterion) == (attained, limit, criterion)
    assert state.max_deviation == 0.0
    # fio's slope is the least-squares slope of the samples in the order given (one a
    # second): so they are in time order; the criterion is that slope in % of their mean
    bw = np.array(state.bw_bytes_s, dtype=float)
    fitted = np.polyfit(np.arange(bw.size), bw, 1)[0]
    assert state.slope == pytest.approx(fitted, rel=1e-9)
    assert state.criterion == pytest.approx(100 * fitted / bw.mean(), abs=1e-6)
    assert (abs(state.criterion) < state.limit) is attained


def test_steadystate_iops_deviation_is_the_largest_distance_from_the_mean() -> None:
    output = golden("ss_iops_deviation_attained.json")
    state = output.job("ss_iops_dev").steadystate
    assert state is not None and state.kind == "iops" and not state.is_slope
    # iops 38048 39538 38895 36530 43764: mean 39355, farthest 43764 - 39355 = 4409
    assert state.max_deviation == 4409.0 and state.slope == 0.0
    assert state.criterion == pytest.approx(100 * 4409 / 39355, abs=1e-6)
    assert state.attained and state.criterion < state.limit == 20.0


@pytest.mark.parametrize("name", WITH_BINS)
def test_jobs_without_steadystate_options_have_none(name: str) -> None:
    assert all(job.steadystate is None for job in golden(name).jobs)
