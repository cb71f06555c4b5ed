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
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_ssd.errors import SsdError
from pytest_ssd.session import SsdSession
from pytest_ssd.text import name_problem
from pytest_ssd.verdict.metrics import METRICS

if TYPE_CHECKING:
    from pytest_ssd.verdict.source import BaselineRun

#: the name the judge is registered under
PLUGIN = "ssd-baseline"
#: the controller's summary of the verdicts
SUMMARY_PLUGIN = "ssd-baseline-summary"


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
    from pytest_ssd.verdict.tolerance import parse_tolerance  # noqa: PLC0415  # with the option

    try:
        return parse_tolerance(text)
    except SsdError as exc:
        raise argparse.ArgumentTypeError(f"--ssd-baseline-tolerance={exc}") from None


def prepare(config: pytest.Config, session: SsdSession) -> BaselineRun | None:
    """On the controller, before anything is made: the baseline asked for, or a UsageError
    (its drives are paired with this run's once they are identified: :func:`start`)."""
    ref = config.getoption("ssd_baseline", None)
    if ref is None:
        return None
    from pytest_ssd.verdict.source import read_baseline  # noqa: PLC0415  # the db reader

    tolerances = dict(config.getoption("ssd_baseline_tolerance", []))
    try:
        return read_baseline(session.options.db, ref, session.run_id, tolerances)
    except SsdError as exc:
        raise pytest.UsageError(str(exc)) from None


def start(config: pytest.Config, session: SsdSession, judged_against: BaselineRun) -> None:
    """Once the devices are identified and have their datasheets: each device paired with
    the baseline's drive that is the same drive (its id: host and serial, else host and
    node name, :mod:`pytest_ssd.device.naming`; never by position), kept with its
    ``[baseline]`` bands in the run folder."""
    from pytest_ssd.device.naming import recorded_key  # noqa: PLC0415
    from pytest_ssd.results.runinfo import collect  # noqa: PLC0415  # see register

    sheets = {
        dut_id: sheet.baseline
        for dut_id, sheet in session.datasheets.items()
        if sheet.baseline is not None
    }
    keys = {dut_id: recorded_key(dut.describe()) for dut_id, dut in session.duts.items()}
    builds = {dut_id: dut.build for dut_id, dut in session.duts.items()}
    paired, notes = judged_against.paired(keys, builds)
    session.warnings.extend(f"--ssd-baseline={judged_against.ref}: {note}" for note in notes)
    judged = replace(paired, sheets=sheets).judged_in(collect([], session.host))
    judged.save(session.run_dir)
    for dut_id, caveats in judged.caveats.items():
        session.warnings.append(
            f"{dut_id}: against the baseline, a regressed or improved point is 'unknown':"
            f" the runs' environments differ: {'; '.join(caveats)}"
        )
    register(config, session.run_dir)
    from pytest_ssd.plugin.judge import BaselineSummary  # noqa: PLC0415  # see register

    config.pluginmanager.register(BaselineSummary(), SUMMARY_PLUGIN)


def register(config: pytest.Config, run_dir: Path) -> None:
    """Judge the tests that run in this process (the controller alone, or a worker)."""
    if config.getoption("ssd_baseline", None) is not None:
        # the verdict machinery is loaded by a run that asks for a baseline, not by every run
        from pytest_ssd.plugin.judge import BaselineJudge  # noqa: PLC0415

        config.pluginmanager.register(BaselineJudge(run_dir), PLUGIN)
