"""The baseline a run is judged against (``--ssd-baseline=RUN|LABEL``), read from the database.

The controller reads the baseline's measurements once, before the first test, and
keeps them in the run folder (``baseline.json``): a worker judges its tests from
that file and never opens the database.  Points are keyed by the test's node id
without its device (:func:`~pytest_ssd.db.shared_test_id`) and the job's name, so a
run on another device (or another device id) compares.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_ssd.db.model import shared_test_id
from pytest_ssd.results.history import HOST_CPUS, STATE_KEY
from pytest_ssd.results.record import Measurement
from pytest_ssd.verdict.environment import demoted, differences
from pytest_ssd.verdict.judge import MetricVerdict, judge_point
from pytest_ssd.verdict.tolerance import SheetTolerances, Tolerances

FILE = "baseline.json"
#: the derived record of a test judged against the baseline
RECORD = "baseline"
#: the option of a run's per-metric bands
OPTION = "--ssd-baseline-tolerance"


def point_key(test: str, name: str) -> str:
    return f"{test}::{name}"


def runs_of(measurements: Iterable[Measurement], dut_id: str) -> dict[str, list[dict[str, Any]]]:
    """Point key -> the metrics of each of its runs (the repeats, or every recording)."""
    points: dict[str, list[dict[str, Any]]] = {}
    for m in measurements:
        key = point_key(shared_test_id(m.test, dut_id), m.name)
        cpus = m.workload.get(HOST_CPUS)  # what else its machine did (judge.busier)
        points.setdefault(key, []).append({**m.metrics, HOST_CPUS: cpus} if cpus else m.metrics)
    return points


def states_of(measurements: Iterable[Measurement], dut_id: str) -> dict[str, str]:
    """Point key -> the state group it was measured in (``workload.state``; "" without one)."""
    return {
        point_key(shared_test_id(m.test, dut_id), m.name): str(m.workload.get(STATE_KEY) or "")
        for m in measurements
    }


@dataclass(frozen=True)
class Baseline:
    """Per device under test: the baseline drive's runs of every point it measured."""

    #: what was asked for (a run id or a label)
    ref: str
    #: dut id -> the baseline drive it is judged against ("run <id>, <label>")
    against: dict[str, str]
    points: dict[str, dict[str, list[dict[str, Any]]]]
    #: metric -> tolerance (a fraction) given for it on the command line
    tolerances: dict[str, float] = field(default_factory=dict)
    #: dut id -> its datasheet's ``[baseline]`` bands (below the command line's)
    sheets: dict[str, SheetTolerances] = field(default_factory=dict)
    #: dut id -> the recorded environment of the baseline run it is judged against
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: dut id -> what this run's environment differs in (:mod:`.environment`): its
    #: "regressed" and "improved" are "unknown" for that reason
    caveats: dict[str, list[str]] = field(default_factory=dict)
    #: dut id -> both sides' builds ("build 1.2.3 against 1.2.2")
    builds: dict[str, str] = field(default_factory=dict)

    def save(self, run_dir: Path) -> Path:
        path = run_dir / FILE
        data = {
            "ref": self.ref,
            "against": self.against,
            "points": self.points,
            "tolerances": self.tolerances,
            "sheets": {dut_id: sheet.as_dict() for dut_id, sheet in self.sheets.items()},
            "caveats": self.caveats,
            "builds": self.builds,
        }
        path.write_text(json.dumps(data))
        return path

    @classmethod
    def load(cls, run_dir: Path) -> Baseline | None:
        path = run_dir / FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        sheets = {k: SheetTolerances.from_dict(v) for k, v in data.get("sheets", {}).items()}
        caveats, builds = data.get("caveats", {}), data.get("builds", {})
        return cls(
            data["ref"],
            data["against"],
            data["points"],
            data["tolerances"],
            sheets,
            {},
            caveats,
            builds,
        )

    def tolerances_of(self, dut_id: str) -> Tolerances:
        """The bands device *dut_id* is judged with: the command line's, then its datasheet's."""
        return Tolerances(self.tolerances, OPTION, self.sheets.get(dut_id))

    def judge(self, dut_id: str, measurements: Sequence[Measurement]) -> list[MetricVerdict]:
        """Every metric of every point of *measurements* the baseline measured too."""
        verdicts = judge_points(
            self.points.get(dut_id, {}),
            runs_of(measurements, dut_id),
            self.tolerances_of(dut_id),
            states_of(measurements, dut_id),
        )
        return demoted(verdicts, self.caveats.get(dut_id, []))

    def judged_in(self, environment: dict[str, Any]) -> Baseline:
        """This baseline for a run recorded in *environment*: each device's caveats."""
        caveats = {
            dut_id: differences(base, environment) for dut_id, base in self.environments.items()
        }
        return replace(self, caveats={k: v for k, v in caveats.items() if v})


Points = Mapping[str, Sequence[Mapping[str, Any]]]


def judge_points(
    base: Points,
    new: Points,
    tolerances: Tolerances | None = None,
    states: Mapping[str, str] | None = None,
) -> list[MetricVerdict]:
    """Every point of *new* that *base* has too (both from :func:`runs_of`), judged; *states*
    (from :func:`states_of`) names each point's state group."""
    verdicts: list[MetricVerdict] = []
    for key, runs in new.items():
        if key in base:
            test, name = key.rsplit("::", 1)
            state = (states or {}).get(key, "")
            verdicts += judge_point(name, base[key], runs, tolerances, test=test, state=state)
    return verdicts
