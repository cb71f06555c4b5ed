"""The baseline's judge (``--ssd-baseline``, see :mod:`pytest_ssd.plugin.against`): after a
test's body, its points against the baseline's.  Loaded only by a run that asks for it."""

from __future__ import annotations

import math
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.results.record import DERIVED_PROPERTY, Derived
from pytest_ssd.verdict import VERDICTS, Baseline, MetricVerdict
from pytest_ssd.verdict.reference import RECORD
from pytest_ssd.verdict.summary import DriveVerdicts, gate, summary_lines


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
        regressed, builds = self._judge(item)
        if regressed:
            pytest.fail(_failure(regressed, builds), pytrace=False)
        return result

    def _judge(self, item: pytest.Item) -> tuple[list[MetricVerdict], str]:
        """*item*'s regressed verdicts, and both sides' builds ("build 1.2.3 against 1.2.2")."""
        bench = getattr(item, "funcargs", {}).get("ssd")
        baseline = self.baseline
        if not isinstance(bench, SsdBench) or baseline is None:
            return [], ""
        verdicts = baseline.judge(bench.dut.id, bench.measurements)
        if not verdicts:
            return [], ""
        counts = {word: sum(v.verdict == word for v in verdicts) for word in VERDICTS}
        against = baseline.against.get(bench.dut.id, baseline.ref)
        builds = baseline.builds.get(bench.dut.id, "")
        bench.derive(
            RECORD,
            {
                "against": against,
                "builds": builds,
                **counts,
                "verdicts": [v.as_dict() for v in verdicts],
            },
        )
        for v in verdicts:
            key = f"{v.point}.{v.direction}.{v.metric}"
            bench.note(f"{key}.baseline", v.verdict)
            if v.ratio is not None:
                bench.note(f"{key}.baseline_ratio", f"{v.ratio:.6g}")
        return [v for v in verdicts if v.verdict == "regressed"], builds


class BaselineSummary:
    """On the controller: each test's verdicts, taken from its report (a worker's too), said
    per drive in pytest's terminal summary as ``pytest-ssd compare --gate`` says them."""

    def __init__(self) -> None:
        #: device -> (the baseline it is judged against, both sides' builds, its verdicts)
        self.drives: dict[str, tuple[str, str, list[MetricVerdict]]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name != DERIVED_PROPERTY or not isinstance(value, str):
                continue
            record = Derived.from_json(value)
            if record.name == RECORD:
                against = str(record.values.get("against", ""))
                builds = str(record.values.get("builds") or "")
                _, _, found = self.drives.setdefault(record.device, (against, builds, []))
                found += [MetricVerdict.from_dict(v) for v in record.values.get("verdicts", [])]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "pytest-ssd: against the baseline")
        drives = [
            DriveVerdicts(f"{device} against {against}", tuple(found), builds)
            for device, (against, builds, found) in self.drives.items()
        ]
        for line in summary_lines(drives):
            terminalreporter.write_line(line)
        code, said = gate(drives)
        terminalreporter.write_line(said, red=bool(code), green=not code)


def _failure(regressed: list[MetricVerdict], builds: str = "") -> str:
    """One line: both sides' builds, the worst regression, and how many more there are."""
    ranked = sorted(regressed, key=lambda v: -abs(math.log(v.ratio or 1.0)))
    line = f"{builds}: {ranked[0].line()}" if builds else ranked[0].line()
    if len(ranked) > 1:
        more = ", ".join(f"{v.direction} {v.label}" for v in ranked[1:])
        line += f"; {len(ranked) - 1} more regressed: {more}"
    return line
