"""fio's native steady state: the options we ask for and the ``steadystate`` block fio reports."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import ConfigError, ParseError
from pytest_ssd.fio.job import FioJob, render
from pytest_ssd.fio.results import parse_output
from pytest_ssd.steady import WDPC_RULE, FioSteadyRule, FioSteadyState, parse_steadystate

GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
# the rule each golden run was made with (see tests/golden/fio/README.md)
GOLDEN_RULES = {
    "ss_bw_slope_attained.json": FioSteadyRule(limit=10, duration_s=5, ramp_s=1),
    "ss_bw_slope_not_attained.json": FioSteadyRule(limit=0.01, duration_s=5, ramp_s=1),
    "ss_iops_deviation_attained.json": FioSteadyRule(
        metric="iops", slope=False, limit=20, duration_s=5
    ),
}


def raw_block(name: str) -> dict[str, Any]:
    block: dict[str, Any] = json.loads((GOLDEN / name).read_text())["jobs"][0]["steadystate"]
    return block


def test_wdpc_rule_is_seed_000s_bandwidth_slope_for_30_s() -> None:
    assert WDPC_RULE.spec == "bw_slope:10%"
    assert WDPC_RULE.options() == (
        ("steadystate", "bw_slope:10%"),
        ("steadystate_duration", "30"),
        ("steadystate_ramp_time", "0"),
    )


@pytest.mark.parametrize(
    ("rule", "spec"),
    [
        (FioSteadyRule(limit=0.01), "bw_slope:0.01%"),
        (FioSteadyRule(metric="iops", slope=False, limit=2, percent=False), "iops:2"),
        (FioSteadyRule(metric="iops", limit=0.5), "iops_slope:0.5%"),
        (FioSteadyRule(slope=False, limit=1_000_000, percent=False), "bw:1e+06"),
    ],
)
def test_spec_strings(rule: FioSteadyRule, spec: str) -> None:
    assert rule.spec == spec
    assert rule.options()[0] == ("steadystate", spec)


@pytest.mark.parametrize("name", sorted(GOLDEN_RULES))
def test_golden_runs_used_exactly_the_options_the_rule_renders(name: str) -> None:
    job = parse_output((GOLDEN / name).read_text()).jobs[0]
    rule = GOLDEN_RULES[name]
    assert dict(rule.options()).items() <= job.options.items()
    assert job.steadystate is not None
    assert (job.steadystate.kind, job.steadystate.limit) == (rule.spec.split(":")[0], rule.limit)
    assert job.steadystate.duration_s == rule.duration_s


def test_rule_options_go_into_the_job_file() -> None:
    job = FioJob(
        "wdpc", "seq", 131072, iodepth=256, read_pct=0, runtime_s=600, extra=WDPC_RULE.options()
    )
    text = render([job], "/dev/loop9")
    lines = text.splitlines()
    assert lines[-3:] == [
        "steadystate=bw_slope:10%",
        "steadystate_duration=30",
        "steadystate_ramp_time=0",
    ]
    assert "time_based=1" in lines and "runtime=600" in lines


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metric": "lat"}, "metric 'lat' is not 'bw' or 'iops'"),
        ({"limit": 0}, "limit 0 must be a positive number"),
        ({"limit": float("inf")}, "limit inf must be"),
        ({"duration_s": 1}, "duration 1 s is under 2 s"),
        ({"ramp_s": -1}, "ramp time -1 s is negative"),
    ],
)
def test_rule_parameters_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FioSteadyRule(**kwargs)


def test_parse_steadystate_absent_is_none() -> None:
    assert parse_steadystate(None, "jobs[0]") is None


def _broken(change: str) -> dict[str, Any]:
    block = copy.deepcopy(raw_block("ss_bw_slope_attained.json"))
    if change == "ss":
        block["ss"] = "bw_slope=10%"
    elif change == "no data":
        del block["data"]
    elif change == "bw not a list":
        block["data"]["bw"] = 5
    elif change == "short iops":
        block["data"]["iops"].pop()
    elif change == "criterion":
        block["criterion"] = "fast%"
    return block


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("ss", r"jobs\[0\]\.steadystate: 'ss' is not a criterion:limit .*'bw_slope=10%'"),
        ("no data", r"jobs\[0\]\.steadystate has no 'data'"),
        ("bw not a list", r"steadystate\.data: 'bw' is not a list: 5"),
        ("short iops", r"steadystate\.data: 5 bw but 4 iops samples"),
        ("criterion", r"steadystate: 'criterion' is not a number: 'fast%'"),
    ],
)
def test_malformed_block_is_a_one_line_parse_error(change: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        parse_steadystate(_broken(change), "jobs[0].steadystate")
    assert "\n" not in str(caught.value)
    doc = json.loads((GOLDEN / "ss_bw_slope_attained.json").read_text())
    doc["jobs"][0]["steadystate"] = _broken(change)
    with pytest.raises(ParseError, match=r"fio JSON jobs\[0\] 'ss_attained'\.steadystate"):
        parse_output(json.dumps(doc))


def test_summary_and_as_dict() -> None:
    state = parse_steadystate(raw_block("ss_bw_slope_attained.json"), "x")
    assert isinstance(state, FioSteadyState)
    # bw_mean 207545808 bytes/s = 197.93 MiB/s
    assert state.summary() == (
        "fio steady state attained: bw_slope -3.68 % (limit ±10 %) over 5 s, mean 197.9 MiB/s"
    )
    data = state.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["bw_mib_s"] == [
        b / 2**20 for b in raw_block("ss_bw_slope_attained.json")["data"]["bw"]
    ]
    assert data["attained"] is True and data["limit"] == 10.0 and data["percent"] is True
    deviation = parse_steadystate(raw_block("ss_iops_deviation_attained.json"), "x")
    assert deviation is not None and deviation.metric == "iops" and not deviation.is_slope
    assert deviation.summary() == (
        "fio steady state attained: iops 11.20 % (limit ±20 %) over 5 s, mean 39,355 IOPS"
    )
