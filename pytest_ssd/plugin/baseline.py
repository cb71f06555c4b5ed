"""``--ssd-baseline=RUN|LABEL``: each test's points judged against an earlier build's.

The controller reads the baseline from the results database before the first test
(a name it cannot find refuses the run) and keeps it in the run folder; wherever
a test runs, the judge reads it there.  After a test's body, every point it
recorded that the baseline measured too gets a verdict per metric: the derived
record ``baseline`` (results.json, the database), a verdict word and a ratio per
metric in the test's properties (junitxml), and a regressed metric fails the test
with one line.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_ssd.errors import SsdError
from pytest_ssd.fixture import SsdBench
from pytest_ssd.session import SsdSession
from pytest_ssd.text import name_problem
from pytest_ssd.verdict import VERDICTS, Baseline, MetricVerdict
from pytest_ssd.verdict.baseline import RECORD
from pytest_ssd.verdict.metrics import METRICS
from pytest_ssd.verdict.tolerance import parse_tolerance

#: the name the judge is registered under
PLUGIN = "ssd-baseline"


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--ssd-baseline",
        dest="ssd_baseline",
        default=None,
        type=_ref,
        metavar="RUN|LABEL",
        help="judge every point against this earlier run (or a label's newest run) in the"
        " results database: regressed, improved, same or unknown per metric; a regression"
        " fails its test (use with --ssd-repeat, 5 or more on both sides)",
    )
    group.addoption(
        "--ssd-baseline-tolerance",
        dest="ssd_baseline_tolerance",
        action="append",
        default=[],
        type=_tolerance,
        metavar="METRIC=PERCENT",
        help="the band of 'same' for a metric (" + ", ".join(METRICS) + "); before the"
        " datasheet's [baseline] table; default: the runs' own run-to-run spread, at least 5;"
        " may repeat",
    )


def _ref(text: str) -> str:
    problem = name_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"--ssd-baseline={text!r} {problem}")
    return text


def _tolerance(text: str) -> tuple[str, float]:
    try:
        return parse_tolerance(text)
    except SsdError as exc:
        raise argparse.ArgumentTypeError(f"--ssd-baseline-tolerance={exc}") from None


def prepare(config: pytest.Config, session: SsdSession) -> Baseline | None:
    """On the controller, before anything is made: the baseline asked for, or a UsageError."""
    ref = config.getoption("ssd_baseline", None)
    if ref is None:
        return None
    from pytest_ssd.verdict.source import read_baseline  # noqa: PLC0415  # the db reader

    tolerances = dict(config.getoption("ssd_baseline_tolerance", []))
    try:
        return read_baseline(session.options.db, ref, session.dut_ids, session.run_id, tolerances)
    except SsdError as exc:
        raise pytest.UsageError(str(exc)) from None


def start(config: pytest.Config, session: SsdSession, judged_against: Baseline) -> None:
    """Once the devices have their datasheets: keep the baseline, with each device's
    ``[baseline]`` bands, in the run folder, and judge the controller's tests."""
    sheets = {
        dut_id: sheet.baseline
        for dut_id, sheet in session.datasheets.items()
        if sheet.baseline is not None
    }
    replace(judged_against, sheets=sheets).save(session.run_dir)
    register(config, session.run_dir)


def register(config: pytest.Config, run_dir: Path) -> None:
    """Judge the tests that run in this process (the controller alone, or a worker)."""
    if config.getoption("ssd_baseline", None) is not None:
        config.pluginmanager.register(BaselineJudge(run_dir), PLUGIN)


class BaselineJudge:
    """After each test's body: its points against the baseline's (see the module docstring)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._baseline: Baseline | None = None

    @property
    def baseline(self) -> Baseline | None:
        if self._baseline is None:
            self._baseline = Baseline.load(self.run_dir)
        return self._baseline

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            result = yield
        except BaseException:
            self._judge(item)  # recorded all the same; the test's own failure is what it says
            raise
        regressed = self._judge(item)
        if regressed:
            pytest.fail(_failure(regressed), pytrace=False)
        return result

    def _judge(self, item: pytest.Item) -> list[MetricVerdict]:
        bench = getattr(item, "funcargs", {}).get("ssd")
        baseline = self.baseline
        if not isinstance(bench, SsdBench) or baseline is None:
            return []
        verdicts = baseline.judge(bench.dut.id, bench.measurements)
        if not verdicts:
            return []
        counts = {word: sum(v.verdict == word for v in verdicts) for word in VERDICTS}
        against = baseline.against.get(bench.dut.id, baseline.ref)
        bench.derive(
            RECORD,
            {"against": against, **counts, "verdicts": [v.as_dict() for v in verdicts]},
        )
        for v in verdicts:
            key = f"{v.point}.{v.direction}.{v.metric}"
            bench.note(f"{key}.baseline", v.verdict)
            if v.ratio is not None:
                bench.note(f"{key}.baseline_ratio", f"{v.ratio:.6g}")
        return [v for v in verdicts if v.verdict == "regressed"]


def _failure(regressed: list[MetricVerdict]) -> str:
    """One line: the worst regression, and how many more there are."""
    ranked = sorted(regressed, key=lambda v: -abs(math.log(v.ratio or 1.0)))
    line = ranked[0].line()
    if len(ranked) > 1:
        more = ", ".join(f"{v.direction} {v.label}" for v in ranked[1:])
        line += f"; {len(ranked) - 1} more regressed: {more}"
    return line
